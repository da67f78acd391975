"""`AttentionParams` for a scenario, built the way `DotProductAttention` builds them.

`DotProductAttention.forward` fills `AttentionParams` from its tensors and its own settings; some
of those values differ from the dataclass defaults (no bias gives `core_attention_bias_shape=None`
and `core_attention_bias_requires_grad=False`, the softmax scale is `1/sqrt(head_dim)`, the window
comes from the release's own `check_set_window_size`, the diagonal alignment from the mask,
`fp8_meta` is the module's dict). Calling the selector with the defaults instead would run
filters no real call runs. Every input the scenario names is built as that caller builds it: the
dtype and tensor class the selector's module names, the release's own FP8 recipe object
(`recipes`), a KV cache's `inference_params` (`kv_cache`), a bias shape as the release takes it
(its name before TE 2.20, the tensor's shape tuple since), `context_parallel` from `cp_size`.
Field names differ across releases, so only fields the release's dataclass declares are passed;
a scenario the release cannot express (an input none of whose fields it declares, at a value
other than the default: `scenario.FEATURE_FIELDS`) is refused.

Whether a backward will run is the autograd state the call is made in (the loader builds the
params and selects under `torch.set_grad_enabled(scenario.backward)`), on every release: TE
upstream's `DotProductAttention` passes `requires_backward` computed from it, and a field that
derives it with a `default_factory` (the codemod's and the runtime patch's signal) is left to
read it, as TE 2.15 - 2.20's call, which does not pass it, leaves it.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
from typing import Any, Callable, Mapping

import torch

from selector_patch.harness.kv_cache import inference_params
from selector_patch.harness.recipes import NoRecipe, fp8_meta
from selector_patch.scenario import OPTIONAL_FEATURES, Scenario, expressible

#: The name of the release's parameters dataclass.
PARAMS = "AttentionParams"
#: What `get_qkv_layout` puts before the layout of a paged KV cache.
PAGED_PREFIX = "paged_kv_"
#: The plain call: optional features the release cannot express must stay at these values.
DEFAULT = Scenario()


class Unrepresentable(Exception):
    """The release's `AttentionParams` cannot express this scenario."""


def field_names(params_class: type) -> tuple[str, ...]:
    """The fields the harness passes, as `DotProductAttention` does: all but those that compute
    their own value (a `default_factory`, such as the backward signal reading autograd)."""
    return tuple(
        field.name
        for field in dataclasses.fields(params_class)
        if field.default_factory is dataclasses.MISSING
    )


def attention_params_kwargs(
    scenario: Scenario,
    fields: tuple[str, ...],
    namespace: Mapping[str, Any],
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Keyword arguments for the release's `AttentionParams`, as a DPA call passes them.

    `namespace` is the selector module's: its `check_set_window_size`, `AttentionParams`, the
    names it binds (`Float8Tensor`) and its import table (the release's FP8 recipes). `extra`
    sets further fields by name over the values built here (raw values, such as a snapshot
    grid's); they are passed as given, so a field the release does not declare fails in its
    dataclass's own constructor instead of being dropped.
    """
    release = _declared(fields)
    declared, inexpressible = release.declared, release.inexpressible
    if "head_dim_qk" not in declared and scenario.head_dim_qk != scenario.head_dim_v:
        raise Unrepresentable(
            f"head_dim_qk={scenario.head_dim_qk} != head_dim_v={scenario.head_dim_v}: this "
            "release has a single `head_dim`"
        )
    for name in inexpressible:
        value = getattr(scenario, name)
        if value != getattr(DEFAULT, name):
            raise Unrepresentable(f"{name}={value!r}: this release has no `{name}` input")
    qkv_dtype = _dtype(scenario.qkv_dtype)
    passed = {
        "qkv_type": _qkv_type(scenario.qkv_type, namespace),
        "qkv_dtype": qkv_dtype,
        "nominal_dtype": None if scenario.nominal_dtype is None else _dtype(scenario.nominal_dtype),
        "qkv_layout": _qkv_layout(scenario),
        "batch_size": scenario.batch_size,
        "num_heads": scenario.num_heads,
        "num_gqa_groups": scenario.num_gqa_groups,
        "max_seqlen_q": scenario.max_seqlen_q,
        "max_seqlen_kv": scenario.max_seqlen_kv,
        "num_tokens_q": scenario.num_tokens_q,
        "num_tokens_kv": scenario.num_tokens_kv,
        "head_dim": scenario.head_dim_qk,
        "head_dim_qk": scenario.head_dim_qk,
        "head_dim_v": scenario.head_dim_v,
        "attn_mask_type": scenario.attn_mask_type,
        "window_size": _window_size(scenario, namespace.get("check_set_window_size")),
        "bottom_right_diagonal": _bottom_right_diagonal(scenario),
        "softcap": scenario.softcap,
        "alibi_slopes_shape": _alibi_slopes_shape(scenario),
        "core_attention_bias_type": scenario.core_attention_bias_type,
        "core_attention_bias_shape": _bias_shape(scenario, namespace),
        "core_attention_bias_requires_grad": (
            scenario.core_attention_bias_requires_grad
            and scenario.core_attention_bias_type != "no_bias"
        ),
        "pad_between_seqs": scenario.pad_between_seqs,
        "attention_dropout": scenario.attention_dropout,
        "context_parallel": scenario.cp_size > 1,
        "cp_comm_type": scenario.cp_comm_type,
        "cp_size": scenario.cp_size,
        "cp_size_a2a": scenario.cp_size_a2a,
        "deterministic": scenario.deterministic,
        "is_training": scenario.training,
        "requires_backward": scenario.backward,
        "fp8": scenario.fp8_recipe is not None,
        "fp8_meta": _fp8_meta(scenario, namespace),
        "inference_params": _inference_params(scenario, qkv_dtype),
        "softmax_scale": (
            1.0 / math.sqrt(scenario.head_dim_qk)
            if scenario.softmax_scale is None
            else scenario.softmax_scale
        ),
        "num_splits": scenario.num_splits,
        "has_score_mod": scenario.has_score_mod,
        "has_score_mod_bprop": scenario.has_score_mod_bprop,
        "softmax_type": scenario.softmax_type,
        "return_max_logit": scenario.return_max_logit,
        "cuda_graph": scenario.cuda_graph,
        "fp8_output": scenario.fp8_output,
        "checkpoint_core_attention": scenario.checkpoint_core_attention,
    }
    if release.absent is None:
        release.absent = tuple(passed.keys() - declared)
    for name in release.absent:  # the few this release does not declare
        del passed[name]
    if extra:
        passed.update(extra)
    return passed


def shareable(kwargs: Mapping[str, Any]) -> bool:
    """Whether requests may share `kwargs`' values: none of them is an object a call could
    change but an empty `fp8_meta`, which `fresh` makes anew (an FP8 recipe and a KV cache's
    `inference_params` are built for each request)."""
    return not kwargs.get("fp8_meta") and kwargs.get("inference_params") is None


def fresh(kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of shareable `kwargs` for one more call, with an `fp8_meta` of its own."""
    copy = dict(kwargs)
    if "fp8_meta" in copy:
        copy["fp8_meta"] = {}
    return copy


@dataclasses.dataclass
class _Declared:
    """What a release's fields leave out of the values built for every request."""

    declared: frozenset[str]
    #: The optional features, in order, that the release cannot express.
    inexpressible: tuple[str, ...]
    #: The values built that the release has no field for (known after its first request).
    absent: tuple[str, ...] | None = None


@functools.lru_cache(maxsize=64)
def _declared(fields: tuple[str, ...]) -> _Declared:
    """Once per release, not per request (a selection diff makes some 350,000)."""
    inexpressible = tuple(name for name in OPTIONAL_FEATURES if not expressible(name, fields))
    return _Declared(frozenset(fields), inexpressible)


def _qkv_layout(scenario: Scenario) -> str:
    """The layout `get_qkv_layout` answers: a paged KV cache's carries the `paged_kv_` prefix."""
    if scenario.kv_cache == "paged" and not scenario.qkv_layout.startswith(PAGED_PREFIX):
        return PAGED_PREFIX + scenario.qkv_layout
    return scenario.qkv_layout


def _window_size(scenario: Scenario, check_set_window_size: Callable | None) -> Any:
    """The window `DotProductAttention` passes: the module's, as the release's
    `check_set_window_size` sets it for the mask; a window it asserts against is no request."""
    if check_set_window_size is None:
        return scenario.window_size
    try:  # its notice that it changed the window goes to the selection's log (`WarningsView`)
        return check_set_window_size(scenario.attn_mask_type, scenario.window_size)
    except AssertionError as error:
        raise Unrepresentable(f"window_size={scenario.window_size!r}: {error}") from None


def _dtype(name: str) -> torch.dtype:
    """The torch dtype a scenario names (`"float8_e4m3fn"`), as the caller's tensors hold it."""
    dtype = getattr(torch, name, None)
    if not isinstance(dtype, torch.dtype):
        raise Unrepresentable(f"{name!r} is no torch dtype")
    return dtype


def _qkv_type(name: str | type, namespace: Mapping[str, Any]) -> type:
    """The class `name` denotes in the selector's module (`torch.Tensor`, `Float8Tensor`), or in
    torch; a class given as it is (TE's own, as a snapshot grid gives it) is passed on."""
    if not isinstance(name, str):
        return name
    head, *rest = name.split(".")
    value = namespace.get(head, torch if head == "torch" else None)  # a file that imports none
    for part in rest:
        value = getattr(value, part, None)
    if value is None:
        raise Unrepresentable(f"qkv_type={name!r}: the selector's module binds no such class")
    return value


def _bottom_right_diagonal(scenario: Scenario) -> bool:
    """The diagonal alignment `DotProductAttention.forward` resolves (TE 2.12+): top-left for
    a plain causal mask, bottom-right for the bottom-right masks and when unset."""
    if scenario.attn_mask_type in ("causal", "padding_causal"):
        return False
    if scenario.bottom_right_diagonal is None or "bottom_right" in scenario.attn_mask_type:
        return True
    return scenario.bottom_right_diagonal


def _alibi_slopes_shape(scenario: Scenario) -> torch.Size | None:
    """`alibi_slopes.shape` when the bias is ALiBi with given slopes, as TE passes it."""
    if scenario.core_attention_bias_type != "alibi" or scenario.alibi_slopes_shape is None:
        return None
    return torch.Size(scenario.alibi_slopes_shape)


def _bias_shape(scenario: Scenario, namespace: Mapping[str, Any]) -> str | tuple | None:
    """The bias shape as the release takes it: the name (`"1hss"`) where the field's default
    is a name, else (TE 2.20+) the bias tensor's shape tuple, built from the scenario's sizes.
    A tuple is the caller's own shape and passes as it is."""
    shape = scenario.core_attention_bias_shape
    if scenario.core_attention_bias_type == "no_bias":
        return None
    if not isinstance(shape, str) or isinstance(_declared_default(namespace), str):
        return shape
    if not re.fullmatch("[b1][h1][s1]s", shape):
        raise Unrepresentable(f"core_attention_bias_shape={shape!r}: no bias shape name")
    sizes = (scenario.batch_size, scenario.num_heads, scenario.max_seqlen_q, scenario.max_seqlen_kv)
    return tuple(size if letter != "1" else 1 for letter, size in zip(shape, sizes))


def _declared_default(namespace: Mapping[str, Any]) -> Any:
    """The release's default bias shape (a name before TE 2.20, None since)."""
    params_class = namespace.get(PARAMS)
    if not dataclasses.is_dataclass(params_class):
        return None
    fields = {field.name: field.default for field in dataclasses.fields(params_class)}
    return fields.get("core_attention_bias_shape")


def _fp8_meta(scenario: Scenario, namespace: Mapping[str, Any]) -> dict:
    """The module's own `fp8_meta` dict: empty outside an FP8 autocast (never None: TE 2.15's
    `__eq__` reads it), else holding the autocast's recipe."""
    if scenario.fp8_recipe is None:
        return {}
    options = {"fp8_dpa": scenario.fp8_dpa, "fp8_mha": scenario.fp8_mha}
    try:
        return fp8_meta(namespace, scenario.fp8_recipe, options)
    except NoRecipe as error:
        raise Unrepresentable(f"fp8_recipe={scenario.fp8_recipe!r}: {error}") from None


def _letters(part: str) -> str:
    """A layout's part as a format, as TE's `get_qkv_format` reads it: `bs3hd` is `bshd`."""
    return "".join(letter for letter in part if letter.isalpha())


def _inference_params(scenario: Scenario, dtype: torch.dtype) -> Any:
    if scenario.kv_cache is None:
        return None
    try:
        return inference_params(
            scenario.kv_cache,
            max_batch_size=scenario.batch_size,
            max_sequence_length=scenario.max_seqlen_kv,
            num_heads_kv=scenario.num_gqa_groups,
            head_dim_k=scenario.head_dim_qk,
            head_dim_v=scenario.head_dim_v,
            dtype=dtype,
            page_size=scenario.kv_page_size,
            qkv_format=_letters(scenario.qkv_layout.removeprefix(PAGED_PREFIX).split("_")[0]),
        )
    except ValueError as error:
        raise Unrepresentable(str(error)) from None
