"""Pure conversions kept per distinct input, for the harness's per-request paths.

A selection grid asks the same few thousand fused-query argument lists again and again (some
150,000 selections a snapshot), and turning them into what the query takes is a pure function
of the values: each is made once. An input that cannot be a key (a list, a dict) is made each
time instead of refused.
"""

from __future__ import annotations

from typing import Callable, Hashable, TypeVar

T = TypeVar("T")


def once(cache: dict, key: Hashable, make: Callable[[], T]) -> T:
    """`make()`, kept in `cache` under `key`; made each time where `key` is no key."""
    try:
        found = cache.get(key)
    except TypeError:
        return make()
    if found is None:
        found = cache[key] = make()
    return found
