"""Load a TE selector file on the virtual device and run it for scenarios.

`load_selector` executes the real selector module from source (or from replacement `text`, as the
codemod and fuzzers need) under a private module name with a private import table (see
`imports`). `LoadedSelector.select` pins the scenario's machine, cuDNN answer and `NVTE_*`
variables, and, in the scenario's autograd state, builds `AttentionParams` as
`DotProductAttention` does and calls TE's own `get_attention_backend` (with keyword arguments in
the dialect before `AttentionParams`, see `calling`), looked up on the module at call time so a
wrapper installed there (the runtime patch) is what runs. Whatever the selector's own code
raises, at import or while selecting, is a `LoadError` of one line naming the file
(`failures`): fork code fails in ways no release does.

TE 2.2+ is imported once; its installed packages are pinned per call through
`FlashAttentionUtils`. TE 1.x - 2.1 decide which flash-attn is usable at import, from package
metadata and the device, so they are imported once per machine, each import seeing that machine.
"""

from __future__ import annotations

import ast
import contextlib
import inspect
import threading
import types
from pathlib import Path
from typing import Any, Iterator, Mapping

import torch

from selector_patch import scoped_env
from selector_patch.harness.calling import call_selector, input_names
from selector_patch.harness.device import Machine, MetadataView, TorchView, VirtualDevice
from selector_patch.harness.extension import (
    extension_module,
    member_name,
    returns_reject_message,
)
from selector_patch.harness.failures import LoadError, SelectionError, describe, located
from selector_patch.harness.imports import EXTENSION, TE_PACKAGE, PrivateImports, execute
from selector_patch.harness.logs import LoggingView, LogSink, WarningsView
from selector_patch.harness.opaque import OpaqueModule
from selector_patch.harness.params import attention_params_kwargs
from selector_patch.harness.pinning import ModuleState, pins_packages
from selector_patch.harness.returns import return_layout
from selector_patch.harness.selection import Selection, UnreadableResult, interpret
from selector_patch.scenario import Scenario
from selector_patch.sources import SelectorSource, resolve

SELECTOR = "get_attention_backend"
#: TE computes its log level at import from these; the harness always wants the debug lines.
IMPORT_ENV = {"NVTE_DEBUG": "1", "NVTE_DEBUG_LEVEL": "2"}
ENV_PREFIX = "NVTE_"


class _Import:
    """One execution of the selector module, and the state to restore before each call."""

    def __init__(self, module: types.ModuleType) -> None:
        self.module = module
        self.state = ModuleState(module, module.__dict__[SELECTOR])


class LoadedSelector:
    """A selector module loaded on the virtual device."""

    def __init__(self, source: SelectorSource, text: str) -> None:
        self.source = source
        self.path = source.path
        self.te_version = source.te_version
        self.text = text
        try:
            tree = ast.parse(text, str(self.path))
        except SyntaxError as error:
            raise LoadError(
                self.path, f"syntax error on line {error.lineno}: {error.msg}"
            ) from None
        self._code = compile(tree, str(self.path), "exec")
        self._layout = return_layout(tree, SELECTOR)
        self._package = _package_of(source)
        self._lock = threading.Lock()
        self._sink = LogSink()
        default = Scenario()
        self._device = VirtualDevice(Machine.of(default), default.fused_backend)
        answers = self._device.queries()
        self._imports = PrivateImports(
            source.root,
            views={
                "torch": TorchView(self._device),
                "os": scoped_env.OS_VIEW,
                "logging": LoggingView(self._sink),
                "warnings": WarningsView(self._sink),
                "importlib.metadata": MetadataView(self._device),
            },
            builtin_overrides={"print": self._sink.print},
            answers=answers,
            preset={
                EXTENSION: extension_module(
                    self._device, with_reject_message=returns_reject_message(tree)
                ),
                TE_PACKAGE: OpaqueModule(
                    TE_PACKAGE, {**answers, "__version__": self.te_version or "0+unknown"}
                ),
            },
        )
        self._imported: dict[Machine, _Import] = {}
        self._default = self._import_on(Machine.of(default))
        self.module = self._default.module
        try:
            self.params_fields = input_names(self.module.__dict__, self.module.__dict__[SELECTOR])
        except (ValueError, TypeError) as error:
            raise LoadError(self.path, str(error)) from None
        self._per_machine = not pins_packages(self.module)

    def select(self, scenario: Scenario, params: Mapping[str, Any] | None = None) -> Selection:
        """Run TE's selector for `scenario`; raises `Unrepresentable` if the release cannot.

        `params` sets further `AttentionParams` fields by name (see `attention_params_kwargs`).
        """
        with self.pinned(scenario) as module:
            kwargs = attention_params_kwargs(
                scenario, self.params_fields, module.__dict__.get("check_set_window_size"), params
            )
            return self._run(module.__dict__, kwargs, scenario)

    @contextlib.contextmanager
    def pinned(self, scenario: Scenario) -> Iterator[types.ModuleType]:
        """The selector's module as it runs on the scenario's device, with its `NVTE_*`
        variables, installed packages and autograd state, for TE code that selects through it.

        A backward will run iff autograd records the call: that is how a caller says it, while
        `DotProductAttention` builds the params and selects.
        """
        member_name(scenario.fused_backend)  # reject a misspelt answer before running
        with (
            self._lock,
            scoped_env.overridden(dict(scenario.env), hide_prefix=ENV_PREFIX),
            torch.set_grad_enabled(scenario.backward),
        ):
            machine = Machine.of(scenario)
            imported = self._import_on(machine) if self._per_machine else self._default
            self._device.pin(machine, scenario.fused_backend)
            imported.state.reset(machine.flash_attn)
            self._sink.take()
            yield imported.module

    def _run(self, namespace: dict, kwargs: dict, scenario: Scenario) -> Selection:
        """Call the selector and read its result; what fails in its code is a `SelectionError`."""
        try:
            result = call_selector(namespace, namespace[SELECTOR], kwargs)
            return interpret(result, self._layout, namespace, scenario, self._sink.take())
        except UnreadableResult as error:
            raise SelectionError(self.path, f"{SELECTOR} {error}") from None
        except Exception as error:
            machine = Machine.of(scenario)
            raise SelectionError(
                located(self.path, error), f"{SELECTOR} raised {describe(error)} (on {machine})"
            ) from error

    def _import_on(self, machine: Machine) -> _Import:
        """The module as imported on `machine`, executing it on first use."""
        imported = self._imported.get(machine)
        if imported is not None:
            return imported
        module = self._imports.new_module(self.path, package=self._package)
        self._device.pin(machine, self._device.fused_backend)
        try:
            with scoped_env.overridden(IMPORT_ENV, hide_prefix=ENV_PREFIX):
                execute(self._code, module)
        except Exception as error:  # the module's own import-time failure, reported as such
            raise LoadError(
                located(self.path, error), f"import on {machine} failed: {describe(error)}"
            ) from error
        if not isinstance(inspect.unwrap(module.__dict__.get(SELECTOR)), types.FunctionType):
            raise LoadError(self.path, f"defines no {SELECTOR} function")
        imported = self._imported[machine] = _Import(module)
        return imported


def _package_of(source: SelectorSource) -> str:
    """The dotted package the file lives in, for its relative imports ("" outside a TE tree)."""
    if source.root is None:
        return ""
    relative = source.path.relative_to(source.root).with_suffix("")
    return ".".join(relative.parts[:-1])


def load_selector(
    source: SelectorSource | str | Path, *, text: str | None = None
) -> LoadedSelector:
    """Load the selector of `source`: a resolved source, or any spec `sources.resolve` takes.

    `text` replaces the file's contents; the module still lives at the file's place in its tree.
    """
    if not isinstance(source, SelectorSource):
        source = resolve(str(source))
    if text is None:
        try:
            text = source.path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise LoadError(source.path, f"cannot read: {error}") from None
    return LoadedSelector(source, text)
