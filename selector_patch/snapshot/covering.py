"""The rows of a grid's inputs besides architecture, mode and switches: each value alone, then
each pair of values of two inputs that meet in one of the selector's conditions.

Crossing every value of forty inputs is astronomically many calls, and a textbook pairwise
covering array is no answer either: each of its rows sets nearly every input to an unusual
value at once, and one of them (`has_score_mod=True`, an FP8 dtype) switches off the very
backend the others would tell apart. On TE 2.20.2 such rows never once left FlashAttention 4
the pick for a deterministic request on SM 12.0, so the hazard TEA001 guards against was nowhere
in the grid; packing several pairs into a row masks the same way (TEA002's head dim with dropout
showed in 2 requests of 60). So every row sets at most two inputs off their default:

- `singles_of`: the plain call (every input at its default), then each value of each input
  alone (base-choice coverage): a filter on one input shows on every architecture, in every
  mode and under every switch setting;
- `pair_rows`: each pair of non-default values of two inputs the selector tests in one condition
  (`if head_dim > 192 and dropout > 0`, a call such as `_is_fa3_supported(num_heads, ...,
  head_dim_qk, head_dim_v, qkv_dtype)`, or one local such as TE's padded head dim,
  `max(qk, v)`), one row each. Two inputs that never meet in one condition can only act
  together through the backend flags, which every single value already meets under every
  switch setting. (A pair with one value at its default is a single.)

Deterministic: the same sizes and pairs give the same rows, in the same order.
"""

from __future__ import annotations

from typing import Iterable, Sequence


def singles_of(sizes: Sequence[int], inputs: Iterable[int] | None = None) -> list[tuple[int, ...]]:
    """The plain call, then each level of each input alone (level 0 is the input's default),
    of `inputs` (positions) only when given."""
    count = len(sizes)
    found = [tuple([0] * count)]
    for position in range(count) if inputs is None else inputs:
        for level in range(1, sizes[position]):
            found.append(_row(count, {position: level}))
    return found


def pair_rows(sizes: Sequence[int], pairs: Iterable[tuple[int, int]]) -> list[tuple[int, ...]]:
    """One row per combination of non-default levels of each pair of inputs."""
    count = len(sizes)
    return [
        _row(count, {first: a, second: b})
        for first, second in sorted({tuple(sorted(pair)) for pair in pairs})
        for a in range(1, sizes[first])
        for b in range(1, sizes[second])
    ]


def _row(count: int, levels: dict[int, int]) -> tuple[int, ...]:
    return tuple(levels.get(position, 0) for position in range(count))
