"""`select()` values in JSON and back: tuples as lists, named constants as `{"expr": ...}`.

A request's values are literals (`128`, `"causal"`, `None`), tuples (`compute_capability`,
`window_size`) or constants the selector names (`torch.float16`, looked up in the loaded module
when asked). JSON has lists and no names, so a list is read back as a tuple (no `select()` value
is a list) and a named constant is written as an object holding its name.
"""

from __future__ import annotations

from typing import Any

from selector_patch.snapshot.comparisons import Expression

EXPRESSION = "expr"


def encode(value: Any) -> Any:
    if isinstance(value, Expression):
        return {EXPRESSION: value.text}
    if isinstance(value, tuple):
        return [encode(item) for item in value]
    return value


def decode(value: Any) -> Any:
    if isinstance(value, dict):
        if set(value) != {EXPRESSION} or not isinstance(value[EXPRESSION], str):
            raise ValueError(f"not a value: {value!r}")
        return Expression(value[EXPRESSION])
    if isinstance(value, list):
        return tuple(decode(item) for item in value)
    return value


def spelled(value: Any) -> str:
    """The value as a caller types it: `(12, 0)`, `'causal'`, `torch.float16`."""
    if isinstance(value, tuple):
        items = [spelled(item) for item in value]
        return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"
    return repr(value)
