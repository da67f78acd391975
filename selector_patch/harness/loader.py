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

TE 2.2+ is imported once; what its kernel wiring (`backends.py`) concludes from the installed
packages is pinned per call through `FlashAttentionUtils` (`wiring`, `pinning`). TE 1.x - 2.1
decide which flash-attn is usable at import, from package metadata and the device, so they are
imported once per machine, each import seeing that machine.

cuDNN's fused-attention answer is TE's own query where the source's TE has one at hand
(`fused_sources`: the checkout's own `transformer_engine/common`, else the directory of
per-release trees named by `te_cxx` or `TE_ATTN_GUARDS_TE_CXX`, else the release's compiled
library); elsewhere it is an assumption, and `fused_assumption` says so in one sentence every
result carries.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import functools
import inspect
import threading
import types
from pathlib import Path
from typing import Any, Callable, ContextManager, Iterator, Mapping

import torch

from selector_patch import scoped_env
from selector_patch.bytecode import reached_functions
from selector_patch.harness.calling import call_selector, input_names
from selector_patch.harness.compiled import compiled
from selector_patch.harness.device import Machine, MetadataView, TorchView, VirtualDevice
from selector_patch.harness.extension import (
    extension_module,
    member_name,
    returns_reject_message,
)
from selector_patch.harness.failures import LoadError, SelectionError, describe, located
from selector_patch.harness.grad_state import names_it
from selector_patch.harness.config_fields import VERDICT_ASSUMED
from selector_patch.harness.fused_sources import fused_query, verdicts_note
from selector_patch.harness.imports import (
    EXTENSION,
    TE_PACKAGE,
    PrivateImports,
    dotted_name,
    execute,
)
from selector_patch.harness.kernels import kernel_module
from selector_patch.harness.logs import LoggingView, LogSink, WarningsView
from selector_patch.harness.opaque import OpaqueModule
from selector_patch.harness.params import (
    PARAMS,
    Unrepresentable,
    attention_params_kwargs,
    fresh,
    shareable,
)
from selector_patch.harness.recipes import PYDANTIC_DATACLASSES, fp8_te_dtype
from selector_patch.harness.pinning import ModuleState, pins_packages
from selector_patch.harness.returns import Layout, return_layout
from selector_patch.harness.selection import Selection, UnreadableResult, interpret
from selector_patch.harness.wiring import Wiring, find_wiring
from selector_patch.roles import ROLES
from selector_patch.scenario import Scenario
from selector_patch.sources import SelectorSource, SourceError, resolve

SELECTOR = "get_attention_backend"
#: TE computes its log level at import from these; the harness always wants the debug lines.
IMPORT_ENV = {"NVTE_DEBUG": "1", "NVTE_DEBUG_LEVEL": "2"}
ENV_PREFIX = "NVTE_"


@functools.lru_cache(maxsize=256)
def _shape(text: str, filename: str) -> tuple[bool, Layout | None]:
    """What the harness reads of a selector's source: whether it unpacks the fused query's
    reject message, and how its returns name their items. Kept per text, as its code is
    (`compiled`, whose keys hold the same texts), not the tree: a session loads some 100
    selectors (releases, their guarded copies, a fuzzer's rewrites) again and again, and TE
    2.20.2's tree is some 5 MB."""
    tree = ast.parse(text, filename)
    return returns_reject_message(tree), return_layout(tree, SELECTOR)


def _autograd(backward: bool) -> ContextManager[None]:
    """Autograd recording iff a backward will run; no block where it already is so (a grid
    asks a mode's requests in a row)."""
    if torch.is_grad_enabled() == backward:
        return contextlib.nullcontext()
    return torch.set_grad_enabled(backward)


class _Import:
    """One execution of the selector module, and the state to restore before each call."""

    def __init__(self, module: types.ModuleType, wire: Callable[[], None] | None) -> None:
        self.module = module
        self.state = ModuleState(module, module.__dict__[SELECTOR], wire)


class LoadedSelector:
    """A selector module loaded on the virtual device.

    `te_cxx` names the directory of per-release C++ trees (see `selector_patch.te_cxx.locate`);
    `query` is TE's fused query to use instead (the verdict recorder's, on a real GPU).
    """

    def __init__(
        self, source: SelectorSource, text: str, te_cxx: Path | str | None = None, query=None
    ) -> None:
        self.source = source
        self.path = source.path
        self.te_version = source.te_version
        self.text = text
        try:
            two_results, self._layout = _shape(text, str(self.path))
        except SyntaxError as error:
            raise LoadError(
                self.path, f"syntax error on line {error.lineno}: {error.msg}"
            ) from None
        self._query, self._assumption = (
            (query, None) if query is not None else fused_query(source, te_cxx, two_results)
        )
        self._code = compiled(text, str(self.path))
        self._package = dotted_name(source.position, source.root).rpartition(".")[0]
        self._lock = threading.Lock()
        self._sink = LogSink()
        default = Scenario()
        self._device = VirtualDevice(Machine.of(default))
        answers = {
            **self._device.queries(),
            "get_fp8_te_dtype": lambda *args, **kwargs: fp8_te_dtype(
                self._imports.modules[EXTENSION].DType, *args, **kwargs
            ),
        }
        self._torch = TorchView(self._device)
        self._imports = PrivateImports(
            source.root,
            views={
                "torch": self._torch,
                "os": scoped_env.OS_VIEW,
                "pydantic.dataclasses": PYDANTIC_DATACLASSES,
                "logging": LoggingView(self._sink),
                "warnings": WarningsView(self._sink),
                "importlib.metadata": MetadataView(self._device),
            },
            builtin_overrides={"print": self._sink.print},
            answers=answers,
            preset={
                EXTENSION: extension_module(
                    self._device,
                    self._query,
                    self._sink.print,
                    with_reject_message=two_results,
                ),
                TE_PACKAGE: OpaqueModule(
                    TE_PACKAGE, {**answers, "__version__": self.te_version or "0+unknown"}
                ),
            },
            kernels=self._kernel,
        )
        self._imported: dict[Machine, _Import] = {}
        #: Machines the module does not import on (TE 1.9 without flash-attn 2), each with the
        #: failure: raised again, not imported again, for every request on that machine.
        self._failed: dict[Machine, LoadError] = {}
        self._default = self._import_on(Machine.of(default))
        self.module = self._default.module
        try:
            self.params_fields = input_names(self.module.__dict__, self.module.__dict__[SELECTOR])
        except (ValueError, TypeError) as error:
            raise LoadError(self.path, str(error)) from None
        self._per_machine = not pins_packages(self.module)
        #: Fields an `AttentionParams` declares beyond the release's, by class (`_fields`).
        self._signal_fields: dict[Any, tuple[str, ...]] = {}

    def select(
        self,
        scenario: Scenario,
        params: Mapping[str, Any] | None = None,
        memo: dict[int, dict[str, Any]] | None = None,
    ) -> Selection:
        """Run TE's selector for `scenario`; raises `Unrepresentable` if the release cannot.

        `params` sets further `AttentionParams` fields by name (see `attention_params_kwargs`).
        `memo`: the caller's, for requests that differ from this one in their machine and
        environment alone (a grid's runner keeps one per row and mode); see `_kwargs`.
        """
        with (
            self._lock,
            scoped_env.overridden(scenario.env, hide_prefix=ENV_PREFIX),
            _autograd(scenario.backward),
        ):
            namespace = self._pin(scenario).__dict__
            fields = self._fields(namespace.get(PARAMS))
            self._torch.told(fields)
            kwargs = self._kwargs(scenario, fields, namespace, params, memo)
            return self._run(namespace, kwargs, scenario)

    def _kwargs(
        self,
        scenario: Scenario,
        fields: tuple[str, ...],
        namespace: dict,
        params: Mapping[str, Any] | None,
        memo: dict[int, dict[str, Any]] | None,
    ) -> dict[str, Any]:
        """The `AttentionParams` keywords, built as `DotProductAttention` builds them, or a copy
        of those `memo` holds for the module: building them is a tenth of a grid's time.

        What the build runs of TE's code (`check_set_window_size`) decides from the request
        alone, never from the machine, so a build is kept for the memo's other requests unless
        it read an environment variable or logged, and unless it made objects a call could
        change (an FP8 recipe, a KV cache); each copy gets its own empty `fp8_meta`.
        """
        if memo is None:
            return attention_params_kwargs(scenario, fields, namespace, params)
        known = memo.get(id(namespace))
        if known is not None:
            return fresh(known)
        with scoped_env.recording() as read:
            kwargs = attention_params_kwargs(scenario, fields, namespace, params)
        if not read and not self._sink.entries and shareable(kwargs):
            memo[id(namespace)] = kwargs
            return fresh(kwargs)
        return kwargs

    @functools.cached_property
    def backward_unseen(self) -> bool:
        """Whether the selector, and the functions of its module it calls, name nothing that
        tells autograd's state (`grad_state`): then only what `grad_reads` counts can tell it a
        backward will run."""
        selector = inspect.unwrap(self.module.__dict__[SELECTOR])
        return not any(names_it(function.__code__) for function in reached_functions(selector))

    @property
    def grad_reads(self) -> int:
        """How many times a selection has been told autograd's state so far (`GradWatch`)."""
        return self._torch.reads

    def _fields(self, params_class: Any) -> tuple[str, ...]:
        """The fields `DotProductAttention` fills: the release's, and the signals a runtime
        patch gave its `AttentionParams` (`runtime.with_signals`), which a call fills too."""
        added = self._signal_fields.get(params_class)
        if added is None:
            declared = (
                dataclasses.fields(params_class) if dataclasses.is_dataclass(params_class) else ()
            )
            added = tuple(f.name for f in declared if f.name not in self.params_fields)
            self._signal_fields[params_class] = added
        return self.params_fields + added if added else self.params_fields

    def installed(self, role: str, scenario: Scenario) -> bool | None:
        """Whether TE counts `role`'s package as installed on the scenario's machine, as its own
        import-time code left it (`backends.py`'s version gate from TE 2.2, the selector module's
        in TE 1.12 - 2.1); None for a dialect without such a flag."""
        with self.pinned(scenario) as module:
            for expression in ROLES[role].installed:
                owner, _, attribute = expression.rpartition(".")
                holder = module.__dict__.get(owner) if owner else module
                if holder is not None and hasattr(holder, attribute):
                    return bool(getattr(holder, attribute))
        return None

    @contextlib.contextmanager
    def pinned(self, scenario: Scenario) -> Iterator[types.ModuleType]:
        """The selector's module as it runs on the scenario's device, with its `NVTE_*`
        variables, installed packages and autograd state, for TE code that selects through it.

        A backward will run iff autograd records the call: that is how a caller says it, while
        `DotProductAttention` builds the params and selects.
        """
        with (
            self._lock,
            scoped_env.overridden(scenario.env, hide_prefix=ENV_PREFIX),
            _autograd(scenario.backward),
        ):
            yield self._pin(scenario)

    def _pin(self, scenario: Scenario) -> types.ModuleType:
        """`pinned`'s work inside its block (`select` enters the block's parts itself, saving
        a generator's frames on each of some 150,000 requests a snapshot)."""
        if scenario.fused_backend is not None:
            member_name(scenario.fused_backend)  # reject a misspelt override before running
        machine = Machine.of(scenario)
        imported = self._import_on(machine) if self._per_machine else self._default
        self._device.pin(machine, scenario.fused_backend, scenario.onnx_export)
        imported.state.reset(machine, machine.flash_attn)
        self._sink.take()
        return imported.module

    def _run(self, namespace: dict, kwargs: dict, scenario: Scenario) -> Selection:
        """Call the selector and read its result; what fails in its code is a `SelectionError`."""
        try:
            result = call_selector(namespace, namespace[SELECTOR], kwargs)
            return interpret(result, self._layout, namespace, scenario, self._sink.take())
        except UnreadableResult as error:
            raise SelectionError(self.path, f"{SELECTOR} {error}") from None
        except (MemoryError, Unrepresentable):  # the command's budget, or TE refusing the
            raise  # environment itself (`extension`): not an answer
        except Exception as error:
            machine = Machine.of(scenario)
            raise SelectionError(
                located(self.path, error), f"{SELECTOR} raised {describe(error)} (on {machine})"
            ) from error

    @property
    def fused_query_text(self) -> str | None:
        """The C++ fused query's translation unit, where TE's source answers (else None)."""
        return getattr(self._query, "source", None)

    @property
    def fused_assumption(self) -> str | None:
        """ "fused answer assumed: ... (no TE C++ for 2.20.2)"; with TE 2.20+'s compiled query,
        what was assumed of cuDNN's own check and how often; None where TE's query answered
        everything."""
        return self._assumption or verdicts_note(self._query)

    def assumption_of(self, selection: Selection) -> str | None:
        """What one selection's answer rests on: the release-wide assumption, else cuDNN's
        verdict where this very request reached cuDNN's check (its log line says so)."""
        if self._assumption is not None:
            return self._assumption
        return next((line for line in selection.log if line.startswith(VERDICT_ASSUMED)), None)

    def _import_on(self, machine: Machine) -> _Import:
        """The module as imported on `machine`, executing it on first use."""
        imported = self._imported.get(machine)
        if imported is not None:
            return imported
        if machine in self._failed:
            raise self._failed[machine]
        module = self._imports.new_module(self.path, package=self._package)
        self._device.pin(machine, None)
        try:
            with scoped_env.overridden(IMPORT_ENV, hide_prefix=ENV_PREFIX):
                execute(self._code, module)
        except MemoryError:
            raise
        except Exception as error:  # the module's own import-time failure, reported as such
            failed = self._failed[machine] = LoadError(
                located(self.path, error), f"import on {machine} failed: {describe(error)}"
            )
            raise failed from error
        if not isinstance(inspect.unwrap(module.__dict__.get(SELECTOR)), types.FunctionType):
            raise LoadError(self.path, f"defines no {SELECTOR} function")
        imported = self._imported[machine] = _Import(module, self._wire_for(module))
        return imported

    def _wire_for(self, module: types.ModuleType) -> Callable[[], None] | None:
        """Running TE's kernel wiring into `module` on the pinned machine, where it has one."""
        if not pins_packages(module):
            return None
        try:
            wiring = find_wiring(self.source.position, self.source.root)
        except (OSError, SyntaxError, UnicodeDecodeError) as error:
            raise LoadError(
                self.path, f"cannot read its kernel wiring: {describe(error)}"
            ) from None
        if wiring is None:
            return None
        self._imports.register(dotted_name(self.source.position, self.source.root), module)
        return lambda: self._run_wiring(wiring)

    def _run_wiring(self, wiring: Wiring) -> None:
        machine = self._device.machine
        try:
            wiring.run(self._imports)
        except (SourceError, LoadError) as error:  # a kernel release's source could not be had
            raise LoadError(wiring.path, f"on {machine}: {error}") from None
        except MemoryError:
            raise
        except Exception as error:
            raise LoadError(
                located(wiring.path, error), f"kernel wiring on {machine} failed: {describe(error)}"
            ) from error

    def _kernel(self, name: str) -> types.ModuleType | None:
        machine = self._device.machine
        return kernel_module(name, dict(machine.flash_attn), machine.flash_attn_3_source)


def load_selector(
    source: SelectorSource | str | Path,
    *,
    text: str | None = None,
    te_cxx: Path | str | None = None,
) -> LoadedSelector:
    """Load the selector of `source`: a resolved source, or any spec `sources.resolve` takes.

    `text` replaces the file's contents; the module still lives at the file's place in its tree.
    `te_cxx` names the directory of per-release C++ trees (else `TE_ATTN_GUARDS_TE_CXX`, else
    the working directory's `[tool.te-attn-guards] te-cxx`).
    """
    if not isinstance(source, SelectorSource):
        source = resolve(str(source))
    if text is None:
        try:
            text = source.path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise LoadError(source.path, f"cannot read: {error}") from None
    return LoadedSelector(source, text, te_cxx)
