"""Head dims in selector terms: the dims the kernels see, and a run of them as selector bounds.

Both sides of the miner judge refusals per head dim (the CUDA side's dispatch boxes, the CuTe
side's `_validate_head_dims` and hd256 paths). A set of head dims where a site fires becomes
runs of consecutive admitted dims, and each run the bounds on `padded_head_dim` that TE's
selector can test, with witness shapes inside it: one function serves both sides.
"""

from __future__ import annotations

from selector_patch.scenario import Condition

#: Head dims the kernels see: flash-attn's Python pads to a multiple of 8.
HEAD_DIMS = tuple(range(8, 513, 8))
#: The selector input the bounds are stated on.
PADDED_HEAD_DIM = "padded_head_dim"


def runs(heads: list[int], admitted: list[int]) -> list[list[int]]:
    """`heads` as runs of consecutive `admitted` dims, in order."""
    found: list[list[int]] = []
    for value in admitted:
        if value in heads:
            if found and admitted[admitted.index(value) - 1] == found[-1][-1]:
                found[-1].append(value)
            else:
                found.append([value])
    return found


def bounds(heads: list[int], admitted: list[int], pads: bool):
    """Triggers bounding the head dims, and witness shapes inside; None if not one run.

    `pads`: the kernel pads q/k and v to one head dim (flash-attn 2), so a shape with the
    lower neighbour's qk dim and the run's top v dim is inside too.
    """
    if not heads or set(heads) >= set(admitted):
        return (), ((),)
    low, high = heads[0], heads[-1]
    inside = [a for a in admitted if low <= a <= high]
    if inside != heads:
        return None, None
    below = [a for a in admitted if a < low]
    above = [a for a in admitted if a > high]
    triggers = []
    if below:
        triggers.append(Condition(PADDED_HEAD_DIM, ">", below[-1]))
    if above:
        triggers.append(Condition(PADDED_HEAD_DIM, "<=", high))
    multiples = [h for h in heads if h % 32 == 0] or [low]
    dims = sorted({multiples[0], high})
    shapes = [(("head_dim_qk", d), ("head_dim_v", d)) for d in reversed(dims)]
    if below and pads:
        shapes.append((("head_dim_qk", below[-1]), ("head_dim_v", high)))
    return tuple(triggers), tuple(shapes)
