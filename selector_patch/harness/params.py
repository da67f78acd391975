"""`AttentionParams` for a scenario, built the way `DotProductAttention` builds them.

`DotProductAttention.forward` fills `AttentionParams` from its tensors and its own settings; some
of those values differ from the dataclass defaults (no bias gives `core_attention_bias_shape=None`
and `core_attention_bias_requires_grad=False`, the softmax scale is `1/sqrt(head_dim)`, the window
comes from the module's own `check_set_window_size`, `fp8_meta` is the module's dict). Calling the selector with the defaults
instead would run filters no real call runs. Field names differ across releases, so only fields
the release's dataclass declares are passed; a scenario the release cannot express is refused.

Whether a backward will run is the autograd state the call is made in (the loader builds the
params and selects under `torch.set_grad_enabled(scenario.backward)`), on every release: TE
upstream's `DotProductAttention` passes `requires_backward` computed from it, and a field that
derives it with a `default_factory` (the codemod's and the runtime patch's signal) is left to
read it, as TE 2.15 - 2.20's call, which does not pass it, leaves it.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable, Mapping

import torch

from selector_patch.scenario import OPTIONAL_FEATURES, Scenario

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
    check_set_window_size: Callable[[str, Any], Any] | None,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Keyword arguments for the release's `AttentionParams`, as a BF16 no-bias DPA call passes.

    `extra` sets further fields by name (what a `Scenario` has no word for, such as `qkv_dtype`
    or `window_size`), over the values built here; they are passed as given, so a field the
    release does not declare fails in its dataclass's own constructor instead of being dropped.
    """
    if "head_dim_qk" not in fields and scenario.head_dim_qk != scenario.head_dim_v:
        raise Unrepresentable(
            f"head_dim_qk={scenario.head_dim_qk} != head_dim_v={scenario.head_dim_v}: this "
            "release has a single `head_dim`"
        )
    for name in OPTIONAL_FEATURES:
        value = getattr(scenario, name)
        if name not in fields and value != getattr(DEFAULT, name):
            raise Unrepresentable(f"{name}={value!r}: this release has no `{name}` input")
    window_size = (
        check_set_window_size(scenario.attn_mask_type, None) if check_set_window_size else None
    )
    passed = {
        "qkv_type": torch.Tensor,
        "qkv_dtype": torch.bfloat16,
        "qkv_layout": scenario.qkv_layout,
        "batch_size": scenario.batch_size,
        "num_heads": scenario.num_heads,
        "num_gqa_groups": scenario.num_gqa_groups,
        "max_seqlen_q": scenario.max_seqlen_q,
        "max_seqlen_kv": scenario.max_seqlen_kv,
        "head_dim": scenario.head_dim_qk,
        "head_dim_qk": scenario.head_dim_qk,
        "head_dim_v": scenario.head_dim_v,
        "attn_mask_type": scenario.attn_mask_type,
        "window_size": window_size,
        "alibi_slopes_shape": None,
        "core_attention_bias_type": "no_bias",
        "core_attention_bias_shape": None,
        "core_attention_bias_requires_grad": False,
        "pad_between_seqs": False,
        "attention_dropout": scenario.attention_dropout,
        "context_parallel": False,
        "deterministic": scenario.deterministic,
        "is_training": scenario.training,
        "requires_backward": scenario.backward,
        "fp8": False,
        "fp8_meta": {},  # the module's own dict, never None (TE 2.15's `__eq__` reads it)
        "softmax_scale": 1.0 / math.sqrt(scenario.head_dim_qk),
        **{name: getattr(scenario, name) for name in OPTIONAL_FEATURES},
    }
    return {**{name: value for name, value in passed.items() if name in fields}, **(extra or {})}
