"""Ordinary requests over the inputs cuDNN's fused-attention query decides on, as select() keywords.

The frame - architecture x cuDNN x mode (training, eval with a backward, forward only) - is
crossed in full, because the query's branches are keyed on those first. The rest (head dims,
mask, layout with THD, sliding window, bias, dtype, dropout, determinism, sequence lengths) is
covered pairwise: every pair of values of any two of them occurs in some request, spread over
the frames so that each frame sees a different slice of the covering rows.
"""

from __future__ import annotations

import itertools
from typing import Any, Iterator, Mapping, Sequence

import torch

ARCHITECTURES = ((8, 0), (8, 6), (8, 9), (9, 0), (10, 0), (11, 0), (12, 0), (12, 1))
CUDNN = ((8, 9, 7), (9, 10, 0), (9, 18, 1), (9, 21, 0))
MODES = (
    {"training": True, "backward": True},
    {"training": False, "backward": True},
    {"training": False, "backward": False},
)
#: Each factor's values, as select() keywords (several keywords per value where TE needs them).
FACTORS: dict[str, tuple[Mapping[str, Any], ...]] = {
    "head dims": tuple(
        {"head_dim_qk": qk, "head_dim_v": v}
        for qk, v in ((64, 64), (128, 128), (192, 128), (160, 160), (256, 256))
    ),
    "mask": tuple(
        {"attn_mask_type": mask}
        for mask in ("no_mask", "causal", "padding", "padding_causal", "causal_bottom_right")
    ),
    "layout": tuple(
        {"qkv_layout": layout}
        for layout in ("bshd_bshd_bshd", "sbhd_sbhd_sbhd", "thd_thd_thd", "sbh3d")
    ),
    "window": ({}, {"window_size": (128, 0)}),
    "bias": (
        {},
        {"core_attention_bias_type": "post_scale_bias", "core_attention_bias_shape": "1hss"},
        {"core_attention_bias_type": "alibi"},
    ),
    "dtype": ({}, {"qkv_dtype": torch.float16}),
    "dropout": ({}, {"attention_dropout": 0.1}),
    "determinism": ({}, {"deterministic": True}),
    "sequence lengths": ({}, {"max_seqlen_q": 128, "max_seqlen_kv": 2048}),
}


def _pair(first: tuple[int, int], second: tuple[int, int]) -> tuple[tuple[int, int], ...]:
    """Two (factor, value) choices, in factor order."""
    return (first, second) if first[0] < second[0] else (second, first)


def pairwise(sizes: Sequence[int]) -> list[tuple[int, ...]]:
    """Rows of value indices in which every pair of values of two factors occurs (greedy: each
    row starts from an uncovered pair and takes, factor by factor, the value covering most)."""
    uncovered = {
        _pair((a, x), (b, y))
        for a, b in itertools.combinations(range(len(sizes)), 2)
        for x in range(sizes[a])
        for y in range(sizes[b])
    }
    rows = []
    while uncovered:
        (a, x), (b, y) = min(uncovered)
        row: dict[int, int] = {a: x, b: y}
        for factor in range(len(sizes)):
            if factor not in row:
                row[factor] = max(
                    range(sizes[factor]),
                    key=lambda value: sum(
                        _pair((factor, value), chosen) in uncovered for chosen in row.items()
                    ),
                )
        choices = sorted(row.items())
        uncovered -= {_pair(p, q) for p, q in itertools.combinations(choices, 2)}
        rows.append(tuple(value for _, value in choices))
    return rows


def requests(rows_per_frame: int) -> Iterator[dict[str, Any]]:
    """select() keywords: each frame with `rows_per_frame` covering rows, rotating through them."""
    names = list(FACTORS)
    rows = pairwise([len(FACTORS[name]) for name in names])
    frames = itertools.product(ARCHITECTURES, CUDNN, MODES)
    for index, (architecture, cudnn, mode) in enumerate(frames):
        for offset in range(rows_per_frame):
            row = rows[(index * rows_per_frame + offset) % len(rows)]
            request: dict[str, Any] = {
                "compute_capability": architecture,
                "cudnn_version": cudnn,
                **mode,
            }
            for name, value in zip(names, row):
                request.update(FACTORS[name][value])
            yield request
