"""The runtime patch: registry guards for a TE that cannot be edited, applied at start-up.

`install()` wraps `get_attention_backend` on the module TE's callers look it up on
(`dot_product_attention.utils` from TE 2.2, `attention` in 1.x / 2.1). For each call the wrapper
maps the `AttentionParams` and the device (read through the module's own
`get_device_compute_capability` and installed-package flags) to the registry's trigger inputs.
When no hazard is triggered, the original function runs and its result is returned untouched.
When one is, TE's own selector runs with that backend switched off through its `NVTE_*`
variable, overridden for this call and thread only (`scoped_env`; `os.environ` is never
written), so TE picks the fallback, computes `available_backends` and logs as it always does.
The registry message is logged once per configuration on TE's "DotProductAttention" logger.

A backend is switched off by its own variable (`Role.switches[0]`) where the selector reads it.
TE 2.15 - 2.17 read no `NVTE_FLASH_ATTN_V4`, and their `NVTE_FLASH_ATTN=0` would take FA2 / FA3
out of the re-run too (likewise FA2 before 2.18). There the re-run is a copy of the selector
function whose globals see the package as not installed (`FlashAttentionUtils` subclassed with
`v4_is_installed = False`): every FA4 path of those selectors is gated by that flag, so TE falls
back exactly as it does with FA4 filtered out, and the live class, which TE's `FlashAttention`
reads, is left as it is. The view also says TE already recommended installing the package
(`v4_warning_printed`), so the re-run does not advise installing what is installed; its debug
"Running with config" line still reports the package as not installed. TE 1.11 - 2.1 hold FA3 in
the module global `_use_flash_attn_3`, which `DotProductAttention` resets before each selection
and reads after it: the re-run starts with it off, as TE's own FA3 filters leave it, so TE runs
FA2 instead (`global_flag`).

Whether a backward will run is autograd's state when the params are built, as in the codemod:
`install()` puts in the module's `AttentionParams` a subclass with the `requires_backward` field
(default: `torch.is_grad_enabled()`), which `DotProductAttention` constructs through the module
attribute. The field is compared by the params' own `__eq__`, so TE's backend cache (which
reselects only when the params differ) never hands a forward-only FA4 choice to a call that
will run a backward. Params built elsewhere, without the field, are read at selection time.
Before TE 2.10 the params do not say either whether the call runs under CUDA graph capture: the
same subclass adds TE 2.10's `cuda_graph` field (default: TE's own `is_graph_capturing()`), so a
selection made outside capture is never reused inside it (TE #2344's illegal memory access).
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import logging
import os
import threading
import types
from pathlib import Path
from typing import Any, Callable, Sequence

from selector_patch import scoped_env
from selector_patch.bytecode import names_constant
from selector_patch.config import load_config, with_te_fixes
from selector_patch.registry import PACKAGE_FIELD, Hazard
from selector_patch.roles import GATED_FLAGS, ROLES
from selector_patch.scenario import HELD_AS_IS, Scenario

SELECTOR = "get_attention_backend"
PARAMS = "AttentionParams"
#: The field saying a backward will run, as TE upstream and the codemod name it.
BACKWARD_FIELD = "requires_backward"
#: The field saying the call runs under CUDA graph capture, as TE 2.10 and the codemod name it.
CAPTURE_FIELD = "cuda_graph"
#: Where TE's callers look the selector up, newest layout first.
SELECTOR_MODULES = (
    "transformer_engine.pytorch.attention.dot_product_attention.utils",
    "transformer_engine.pytorch.dot_product_attention.utils",
    "transformer_engine.pytorch.attention",
)
LOGGER = "DotProductAttention"


@dataclasses.dataclass
class _Patch:
    original: Callable[..., Any]
    hazards: tuple[Hazard, ...]
    #: The module's `os`, when the patch replaced it with `scoped_env.OS_VIEW`.
    replaced_os: types.ModuleType | None
    #: The module's `AttentionParams`, when the patch gave it the backward or capture signal.
    replaced_params: type | None
    logged: set[tuple[str, Scenario]] = dataclasses.field(default_factory=set)


_patches: dict[types.ModuleType, _Patch] = {}
_lock = threading.Lock()


def _resolve(module: types.ModuleType, expression: str) -> Any:
    """`Name.attr` evaluated in the module's namespace; None where the module lacks it."""
    head, _, attribute = expression.partition(".")
    value = module.__dict__.get(head)
    return getattr(value, attribute, None) if attribute and value is not None else value


def installed_version(module: types.ModuleType, role: str) -> str | None:
    """The version of the role's flash-attn package as the selector module recorded it."""
    for installed, version in zip(ROLES[role].installed, ROLES[role].versions):
        flag = _resolve(module, installed)
        if flag is not None:
            return str(_resolve(module, version)) if flag else None
    return None


def trigger_scenario(module: types.ModuleType, params: Any) -> Scenario:
    """The registry's trigger inputs for one selector call: params plus the current device."""
    fields = {field.name for field in dataclasses.fields(params)}
    head_dim_qk = params.head_dim_qk if "head_dim_qk" in fields else params.head_dim
    head_dim_v = params.head_dim_v if "head_dim_v" in fields else params.head_dim
    backward = getattr(params, BACKWARD_FIELD) if BACKWARD_FIELD in fields else None
    if backward is None:
        import torch  # imported by TE long before it selects; `selector_patch` itself must not

        backward = torch.is_grad_enabled()
    return Scenario(
        compute_capability=tuple(module.get_device_compute_capability()),
        deterministic=bool(params.deterministic),
        training=bool(params.is_training),
        backward=bool(backward),
        attention_dropout=float(params.attention_dropout),
        head_dim_qk=head_dim_qk,
        head_dim_v=head_dim_v,
        **{name: getattr(params, name) for name in HELD_AS_IS if name in fields},
        **built_inputs(module, params, fields),
        **{field: installed_version(module, role) for role, field in PACKAGE_FIELD.items()},
    )


def built_inputs(module: types.ModuleType, params: Any, fields: set[str]) -> dict[str, Any]:
    """The inputs TE's fixes trigger on that the params hold as TE's objects, read back into
    the registry's words: the window, the dtype, the KV cache, the FP8 recipe, and the cuDNN
    version the module's own `get_cudnn_version` reports."""
    inputs: dict[str, Any] = {}
    if getattr(params, "window_size", None) is not None:
        inputs["window_size"] = tuple(params.window_size)
    if "qkv_dtype" in fields:
        inputs["qkv_dtype"] = params.qkv_dtype  # `Scenario` keeps a dtype by its name
    inference = getattr(params, "inference_params", None)
    if inference is not None:
        inputs["kv_cache"] = "paged" if getattr(inference, "is_paged", False) else "non_paged"
    recipe = (getattr(params, "fp8_meta", None) or {}).get("recipe")
    if getattr(params, "fp8", False) and recipe is not None:
        inputs["fp8_recipe"] = type(recipe).__name__
        inputs["fp8_dpa"] = bool(getattr(recipe, "fp8_dpa", False))
    cudnn_version = module.__dict__.get("get_cudnn_version")
    if callable(cudnn_version):
        inputs["cudnn_version"] = tuple(cudnn_version())
    return inputs


def te_capturing() -> bool:
    """TE's own CUDA graph capture state (`make_graphed_callables` sets it), as TE 2.10's
    `DotProductAttention` passes it in `AttentionParams.cuda_graph`. A TE without the graph
    module (a stripped fork) captures nothing through TE, which is all TE 2.10 asks too."""
    try:
        graph = importlib.import_module("transformer_engine.pytorch.graph")
    except ImportError:
        return False
    return bool(graph.is_graph_capturing())


def missing_signals(params_class: Any) -> tuple[str, ...]:
    """The signal fields a dataclass `AttentionParams` lacks (none for any other kind)."""
    if not dataclasses.is_dataclass(params_class):
        return ()
    declared = {field.name for field in dataclasses.fields(params_class)}
    return tuple(name for name in (BACKWARD_FIELD, CAPTURE_FIELD) if name not in declared)


def with_signals(params_class: type, names: Sequence[str]) -> type:
    """`AttentionParams` with the signal fields `names`, each read at construction: whether a
    backward will run (autograd's state), whether the call runs under CUDA graph capture (TE's).

    A subclass whose equality is the base class's own (TE's `__eq__` compares `fp8_meta` by
    its recipe only) and, on top, the same signals.
    """
    import torch  # TE has imported it; importing `selector_patch` must not

    factories = {BACKWARD_FIELD: torch.is_grad_enabled, CAPTURE_FIELD: te_capturing}

    def __eq__(self, other):
        if isinstance(other, signalled) and any(
            getattr(self, name) != getattr(other, name) for name in names
        ):
            return False
        return params_class.__eq__(self, other)

    signalled = dataclasses.make_dataclass(
        params_class.__name__,
        [(name, bool, dataclasses.field(default_factory=factories[name])) for name in names],
        bases=(params_class,),
        eq=False,
        namespace={
            "__module__": params_class.__module__,
            "__doc__": params_class.__doc__,
            "__eq__": __eq__,
        },
    )
    signalled.__qualname__ = params_class.__qualname__
    return signalled


def switch(selector: Callable[..., Any], role: str) -> str:
    """The `NVTE_*` variable that turns `role` off in this selector."""
    switches = ROLES[role].switches
    return next((name for name in switches if names_constant(selector, name)), switches[-1])


def uninstalled_view(module: types.ModuleType, selector: Callable[..., Any], role: str):
    """`(holder name, {attribute: value})` making the role's package read as not installed and
    already recommended, where switching `role` off by variable would switch other backends off
    too; None where its own variable does it alone."""
    if switch(selector, role) == ROLES[role].switches[0] or not hasattr(selector, "__code__"):
        return None
    for expression, warned in zip(ROLES[role].installed, ROLES[role].install_warned):
        holder, _, attribute = expression.partition(".")
        if attribute and isinstance(module.__dict__.get(holder), type):
            return holder, {attribute: False, warned.partition(".")[2]: True}
    return None


def global_flag(module: types.ModuleType, selector: Callable[..., Any], role: str) -> str | None:
    """The module global that is `role`'s flag, where the selector writes it (TE 1.11 - 2.1's
    FA3, `_use_flash_attn_3`, which `DotProductAttention` resets before each selection and
    reads after it); None elsewhere. Set False before the re-run, it is what TE's own FA3
    filters do there: TE runs FA2 instead, where `NVTE_FLASH_ATTN=0` would take FA2 out too."""
    code = getattr(selector, "__code__", None)
    for flag in ROLES[role].flags:
        if flag in GATED_FLAGS and flag in module.__dict__ and code and flag in code.co_names:
            return flag
    return None


def _set_on_base(cls, name: str, value: Any) -> None:
    setattr(cls.__mro__[1], name, value)


def _without(module: types.ModuleType, selector, views: list[tuple[str, dict[str, bool]]]):
    """A copy of `selector` whose globals see each view's holder with its attributes."""
    namespace = dict(module.__dict__)
    for holder, attributes in views:
        live = namespace[holder]
        # What the selector writes on the class (`version_required`) lands on the live one.
        forwarding = type("Forwarding", (type(live),), {"__setattr__": _set_on_base})
        namespace[holder] = forwarding(holder, (live,), attributes)
    copy = types.FunctionType(
        selector.__code__,
        namespace,
        selector.__name__,
        selector.__defaults__,
        selector.__closure__,
    )
    copy.__kwdefaults__ = selector.__kwdefaults__
    return copy


def _wrap(module: types.ModuleType, patch: _Patch) -> Callable[..., Any]:
    original = patch.original

    @functools.wraps(original)
    def get_attention_backend(attention_params=None, *args, **kwargs):
        scenario = trigger_scenario(module, attention_params)
        triggered = [hazard for hazard in patch.hazards if hazard.triggered_by(scenario)]
        if not triggered:
            return original(attention_params, *args, **kwargs)
        _log_once(module, patch, triggered, scenario)
        roles = {hazard.backend for hazard in triggered}
        flags = {role: global_flag(module, original, role) for role in roles}
        for flag in filter(None, flags.values()):
            module.__dict__[flag] = False
        views = {
            role: uninstalled_view(module, original, role) for role in roles if not flags[role]
        }
        switches = {switch(original, role): "0" for role, view in views.items() if view is None}
        rerun = original
        if any(views.values()):
            rerun = _without(module, original, [view for view in views.values() if view])
        with scoped_env.overridden(switches):
            return rerun(attention_params, *args, **kwargs)

    return get_attention_backend


def _log_once(module: types.ModuleType, patch: _Patch, hazards: list[Hazard], scenario) -> None:
    logger = module.__dict__.get("logging", logging).getLogger(LOGGER)
    for hazard in hazards:
        with _lock:
            first = (hazard.id, scenario) not in patch.logged
            patch.logged.add((hazard.id, scenario))
        if first:
            logger.warning(hazard.message)


def selector_module() -> types.ModuleType:
    """The module of the running process's TE that holds the selector (importing TE if needed)."""
    for name in SELECTOR_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError:
            continue
        if callable(module.__dict__.get(SELECTOR)):
            return module
    raise RuntimeError(f"no TE attention selector found in {', '.join(SELECTOR_MODULES)}")


def install(
    module: types.ModuleType | None = None, hazards: Sequence[Hazard] | None = None
) -> types.ModuleType:
    """Wrap the selector of `module` (default: the running TE's); calling it twice is harmless.

    `hazards` defaults to the registry plus what `[tool.te-attn-guards]` of the nearest
    `pyproject.toml` above the working directory declares or skips (as the linter and the
    codemod read it), and TE's own later fixes (`TE_FIXES`) that it does not skip: an older TE
    gets the filters its successors added.
    """
    module = module if module is not None else selector_module()
    if hazards is None:
        hazards = with_te_fixes(load_config(Path.cwd()))
    with _lock:
        if module not in _patches:
            replaced_os = os if module.__dict__.get("os") is os else None
            params_class = module.__dict__.get(PARAMS)
            signals = missing_signals(params_class)
            replaced_params = params_class if signals else None
            patch = _Patch(module.__dict__[SELECTOR], tuple(hazards), replaced_os, replaced_params)
            if replaced_os is not None:
                module.os = scoped_env.OS_VIEW
            if replaced_params is not None:
                module.__dict__[PARAMS] = with_signals(replaced_params, signals)
            module.__dict__[SELECTOR] = _wrap(module, patch)
            _patches[module] = patch
    return module


def uninstall(module: types.ModuleType | None = None) -> None:
    """Put back the original selector function object (and `os`, `AttentionParams`) of every
    patched module, or of `module` only."""
    with _lock:
        for patched in [module] if module is not None else list(_patches):
            patch = _patches.pop(patched, None)
            if patch is None:
                continue
            patched.__dict__[SELECTOR] = patch.original
            if patch.replaced_os is not None:
                patched.os = patch.replaced_os
            if patch.replaced_params is not None:
                patched.__dict__[PARAMS] = patch.replaced_params
