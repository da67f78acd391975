"""From the dispatch's leaves to cases: where each site fires, in selector inputs.

The interpreter says, per path, which inputs take it and how it ends. Here the inputs become
points (architecture x head dim x each feature's value) and, per site, the points where it
fires decidedly, and where it may fire depending on something the inputs do not cover. A site
that fires decidedly somewhere is a finding; one that may fire on every architecture that gets
that far and is decided nowhere (`TORCH_CHECK(q.stride(-1) == 1)`, the empty-sequence branch)
is input validation the selector cannot see, and is counted rather than listed.

Per architecture, the points where a site fires are covered by boxes (a set of values per
input), points no call gets to (refused by another check first: FP8 on flash-attn 2, head dims
above 256) counting as either. A box becomes a case: each feature whose values are not all the
admitted ones gives its selector conditions, the head dims an interval (`padded_head_dim >
192`). Architectures with the same cases are grouped.
"""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass, field
from typing import Iterable, Sequence

from lint_plugin.mine.cuda.calls import ARCH, FEATURES, HEAD_DIM, HEAD_DIMS, Backend, label
from lint_plugin.mine.cuda.paths import Leaf
from lint_plugin.mine.head_dims import bounds, runs
from lint_plugin.mine.findings import NO_LAUNCH, Case, Site, with_backward
from selector_patch.scenario import Condition

ORDER = (ARCH, HEAD_DIM, *FEATURES)
LAUNCH = "launch"


@dataclass
class Direction:
    """Every leaf of one backend's entry points of one direction (forward or backward)."""

    backend: Backend
    backward: bool
    leaves: list[Leaf] = field(default_factory=list)


@dataclass(frozen=True)
class Finding:
    cases: tuple[Case, ...]
    #: Sites that fire only where the inputs do not decide, on every architecture.
    independent: int


def cases(direction: Direction, version: str) -> Finding:
    leaves = direction.leaves
    dims = [d for d in ORDER if any(d in leaf.domains for leaf in leaves)]
    classes = _head_classes(leaves)
    domain = {d: _domain(d, classes) for d in dims}
    admitted: set[tuple] = set()
    decided: dict[Site, set[tuple]] = {}
    undecided: dict[Site, set[tuple]] = {}
    reasons: dict[Site, set[str]] = {}
    for leaf in leaves:
        points = _points(leaf, dims, domain, classes)
        if leaf.outcome in (LAUNCH, NO_LAUNCH):
            admitted |= points
        if leaf.site is None:
            continue
        if leaf.undecided is None:
            decided.setdefault(leaf.site, set()).update(points)
        else:
            undecided.setdefault(leaf.site, set()).update(points)
            reasons.setdefault(leaf.site, set()).add(leaf.undecided)
    admitted_archs = {p[0] for p in admitted}
    found: list[Case] = []
    independent = 0
    for site in sorted(set(decided) | set(undecided), key=lambda s: (s.file, s.line, s.kind)):
        fired = decided.get(site, set())
        maybe = undecided.get(site, set()) - fired
        if not fired and {p[0] for p in maybe} >= admitted_archs:
            independent += 1
            continue
        found += _site_cases(direction, version, site, dims, domain, classes, fired, maybe,
                             admitted, reasons.get(site, set()))  # fmt: skip
    return Finding(tuple(found), independent)


def _head_classes(leaves: Sequence[Leaf]) -> list[frozenset]:
    """Head dims no leaf tells apart, grouped: the points enumerate these, not 64 values."""
    signature: dict[int, list] = {value: [] for value in HEAD_DIMS}
    for index, leaf in enumerate(leaves):
        for number, box in enumerate(leaf.domains.boxes):
            for value in box.get(HEAD_DIM, ()):
                signature[value].append((index, number))
    grouped: dict[tuple, set] = {}
    for value, marks in signature.items():
        grouped.setdefault(tuple(marks), set()).add(value)
    return sorted((frozenset(g) for g in grouped.values()), key=min)


def _domain(dim: str, classes: list[frozenset]) -> tuple:
    if dim == HEAD_DIM:
        return tuple(classes)
    if dim == ARCH:
        from lint_plugin.mine.devices import ARCHITECTURES

        return ARCHITECTURES
    return FEATURES[dim].values


def _points(leaf: Leaf, dims, domain, classes) -> set[tuple]:
    points = set()
    for box in leaf.domains.boxes:
        axes = []
        for dim in dims:
            if dim not in box:
                axes.append(domain[dim])
            elif dim == HEAD_DIM:
                axes.append([c for c in classes if c <= box[dim]])
            else:
                axes.append([v for v in domain[dim] if v in box[dim]])
        points.update(itertools.product(*axes))
    return points


def _site_cases(direction, version, site, dims, domain, classes, fired, maybe, admitted, reasons):
    backend = direction.backend
    evidence = dataclasses.replace(site, backward=direction.backward)
    per_arch: dict[tuple, list] = {}
    for arch in domain[ARCH]:
        mine = {p for p in fired if p[0] == arch}
        care = {p for p in admitted | fired if p[0] == arch}
        heads = sorted(v for c in {p[1] for p in care} for v in c)
        for box in _cover(mine, care, dims, domain):
            for described in _describe(box, dims, care, heads, backend):
                per_arch.setdefault(described, []).append(arch)
        if {p for p in maybe if p[0] == arch}:
            why = "; ".join(sorted(reasons))
            per_arch.setdefault(((), (), f"fires where `{why}`, which no selector input decides",
                                 "head_dim", ((),)), []).append(arch)  # fmt: skip
    return [
        Case(
            site=evidence,
            backend=backend.role,
            distribution=backend.distribution,
            version=version,
            architectures=tuple(archs),
            labels=labels,
            triggers=with_backward(triggers, direction.backward),
            unmapped=unmapped,
            section=section,
            witness_shapes=tuple(dict(shape) for shape in shapes),
        )
        for (triggers, labels, unmapped, section, shapes), archs in per_arch.items()
    ]


def _cover(points: set[tuple], care: set[tuple], dims, domain) -> list[dict]:
    """Boxes covering `points`, grown over points outside `care` too (no call gets there)."""
    boxes = []
    uncovered = set(points)
    for start in sorted(points, key=repr):
        if start not in uncovered:
            continue
        box = {dim: {start[i]} for i, dim in enumerate(dims)}
        for i, dim in enumerate(dims):
            if dim == ARCH:
                continue
            for value in domain[dim]:
                if value in box[dim]:
                    continue
                trial = {**box, dim: {value}}
                if all(p in points or p not in care for p in _box_points(trial, dims)):
                    box[dim].add(value)
        boxes.append(box)
        uncovered -= set(_box_points(box, dims))
    return boxes


def _box_points(box: dict, dims) -> Iterable[tuple]:
    return itertools.product(*(sorted(box[d], key=repr) for d in dims))


def _describe(box, dims, care, admitted_heads, backend) -> list[tuple]:
    """The box as (triggers, labels, unmapped, section, witness shapes), split where one
    conjunction of conditions cannot say it."""
    triggers: list[Condition] = []
    labels: list[str] = []
    unmapped: list[str] = []
    section = "head_dim"
    splits: list[tuple[str, list]] = []
    for i, dim in enumerate(dims):
        if dim in (ARCH, HEAD_DIM):
            continue
        present = {p[i] for p in care}
        values = box[dim] & present
        if values >= present:
            continue
        if len(values) > 1:
            splits.append((dim, sorted(values, key=repr)))
            continue
        (value,) = values
        feature = FEATURES[dim]
        conditions = feature.conditions[value]
        if value != feature.plain:
            labels.append(label(feature, value))
        if isinstance(conditions, str):
            unmapped.append(conditions)
        else:
            triggers += conditions
            if feature.section != "head_dim":
                section = feature.section
    if splits:
        dim, values = splits[0]
        return [
            d
            for v in values
            for d in _describe({**box, dim: {v}}, dims, care, admitted_heads, backend)
        ]
    heads = (
        sorted(v for c in box[HEAD_DIM] for v in c if v in admitted_heads)
        if HEAD_DIM in box
        else []
    )
    head_triggers, shapes = bounds(heads, admitted_heads, backend.pads_head_dims)
    if head_triggers is None:  # not one interval: one case per run
        return [
            d
            for run in runs(heads, admitted_heads)
            for d in _describe(
                {**box, HEAD_DIM: {frozenset(run)}}, dims, care, admitted_heads, backend
            )
        ]
    why = "; ".join(unmapped) or None
    return [(tuple([*triggers, *head_triggers]), tuple(labels), why, section, shapes)]
