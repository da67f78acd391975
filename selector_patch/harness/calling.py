"""How a selector takes its inputs: one `AttentionParams` (TE 1.9+), or keyword parameters.

`AttentionParams` arrived with TE 1.9. Before it (TE's main branch of mid-2024, and forks of that
history) `get_attention_backend(qkv_type=..., qkv_dtype=..., head_dim=..., ...)` declared every
input as a keyword parameter with a default, and `DotProductAttention.forward` called it with
keyword arguments. The dataclass kept those names as its fields, so one set of values
(`params.attention_params_kwargs`, filtered by name) serves both dialects: a release's inputs are
its dataclass's fields, or else its selector's parameters. A parameter the harness has no value
for keeps its default, as it did in DPA's call (`fp8_meta`, unused unless FP8 is on); one
without a default is a call TE's caller could not have made, and fails as such.
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any, Callable, Mapping

from selector_patch.harness.params import PARAMS, field_names

_KEYWORD = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


def input_names(namespace: Mapping[str, Any], selector: Callable[..., Any]) -> tuple[str, ...]:
    """The selector's inputs: its `AttentionParams` fields, or its keyword parameters.

    Raises `ValueError` (one line) for a module that has neither.
    """
    params_class = namespace.get(PARAMS)
    if params_class is not None:
        if not (isinstance(params_class, type) and dataclasses.is_dataclass(params_class)):
            raise ValueError(f"{PARAMS} is not a dataclass")
        return field_names(params_class)
    names = tuple(
        parameter.name
        for parameter in inspect.signature(selector).parameters.values()
        if parameter.kind in _KEYWORD
    )
    if not names:
        raise ValueError(f"defines no {PARAMS}, and its selector takes no keyword parameters")
    return names


def call_selector(
    namespace: Mapping[str, Any], selector: Callable[..., Any], kwargs: dict[str, Any]
) -> Any:
    """Call the selector as its caller did: `selector(AttentionParams(**kwargs))`, or
    `selector(**kwargs)` in the keyword-parameter dialect."""
    params_class = namespace.get(PARAMS)
    if params_class is None:
        return selector(**kwargs)
    return selector(params_class(**kwargs))
