"""The C++ fused query's comparisons, as the grid's: cuDNN versions, architectures, lengths.

TE's C++ (`nvte_get_fused_attn_backend`) decides on constants the Python selector never names:
it refuses F16 on cuDNN 9.10.0 and 9.10.1 (TE 2.6), and from TE 2.10 the combination of cuDNN
9.14.0, a sliding window, a mask that is not causal and `max_seqlen_kv > 1024` (NaN). A grid
derived from the Python alone never asks those requests, so no diff could see TE fix them.

The query is read as text (its translation unit, `te_cxx`): each `NAME op INTEGER` whose C++
name is a `select()` input (`NAMES`), with the integer in the input's terms (`91400` is cuDNN
`(9, 14, 0)`, `sm_arch_ == 120` is `(12, 0)`), is a comparison like the selector's; and each
condition whose body switches the query to no backend is one *conjunction*: its refusal needs
all of its inputs at once, so the grid asks a row that sets them all (`conditions`), beside its
rows of one and two inputs. A mask or layout compared with an enum constant joins as the value
the selector passes (`NVTE_CAUSAL_MASK` is `"causal"`).
"""

from __future__ import annotations

import re
from typing import Callable, Iterator

from selector_patch.snapshot.comparisons import Comparison


def cudnn(value: int) -> tuple[int, int, int]:
    """cuDNN's version number as a tuple: 91400 is 9.14.0, 8906 is 8.9.6."""
    if value >= 10000:
        return (value // 10000, value // 100 % 100, value % 100)
    return (value // 1000, value // 100 % 10, value % 100)


#: C++ name -> (select() keyword, index into it, conversion of the integer).
NAMES: dict[str, tuple[str, int | None, Callable[[int], object]]] = {
    "cudnn_runtime_version": ("cudnn_version", None, cudnn),
    "sm_arch_": ("compute_capability", None, lambda v: (v // 10, v % 10)),
    "max_seqlen_kv": ("max_seqlen_kv", None, int),
    "max_seqlen_q": ("max_seqlen_q", None, int),
    "head_dim_qk": ("head_dim_qk", None, int),
    "head_dim_v": ("head_dim_v", None, int),
    "window_size_left": ("window_size", 0, int),
    "window_size_right": ("window_size", 1, int),
    "num_gqa_groups": ("num_gqa_groups", None, int),
}
_NAME = "|".join(sorted(NAMES, key=len, reverse=True))
_COMPARED = re.compile(
    rf"\b(?P<name>{_NAME})\s*(?:%\s*(?P<modulus>\d+)\s*)?(?P<op>==|!=|<=|>=|<|>)\s*"
    rf"(?P<value>-?\d+)\b"
)
_MASK = re.compile(r"\battn_mask_type\s*(?P<op>==|!=)\s*NVTE_Mask_Type::NVTE_(?P<mask>\w+?)_MASK\b")
#: Flags the query tests for truth, as a condition's conjunct (`&& cuda_graph &&`).
FLAGS = ("cuda_graph", "deterministic", "return_max_logit")
_NO_BACKEND = re.compile(r"^\s*backend\s*=\s*NVTE_Fused_Attn_Backend::NVTE_No_Backend\s*;")


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _comparisons(text: str, offset: int) -> Iterator[Comparison]:
    for found in _COMPARED.finditer(text):
        keyword, index, convert = NAMES[found["name"]]
        if keyword == "cudnn_version" and int(found["value"]) < 1000:
            continue  # a major version alone (`cudnn_runtime_version / 10000 >= 9`): no cut
        modulus = int(found["modulus"]) if found["modulus"] else None
        value = int(found["value"]) if modulus is not None else convert(int(found["value"]))
        yield Comparison(
            keyword,
            found["op"],
            value,
            _line_of(text, offset) if offset >= 0 else 0,
            found.group(0),
            index,
            modulus,
        )
    for found in _MASK.finditer(text):
        mask = found["mask"].lower()
        yield Comparison("attn_mask_type", found["op"], mask, 0, found.group(0))


def _flag(conjunct: str) -> Iterator[Comparison]:
    """`cuda_graph` or `!cuda_graph` alone: the flag's value the conjunct needs."""
    bare = conjunct.strip().strip("()").strip()
    negated = bare.startswith("!")
    name = bare.lstrip("!").strip()
    if name in FLAGS:
        yield Comparison(name, "==", not negated, 0, bare)


def comparisons(text: str) -> list[Comparison]:
    """Every comparison of an input with a constant in the query's text."""
    return list(_comparisons(text, -1))


def _condition_at(text: str, start: int) -> tuple[str, int] | None:
    """The parenthesised condition of the `if` at `start`, and where its body begins."""
    opening = text.find("(", start)
    depth = 0
    for position in range(opening, len(text)):
        if text[position] == "(":
            depth += 1
        elif text[position] == ")":
            depth -= 1
            if depth == 0:
                return text[opening + 1 : position], position + 1
    return None


def _conjuncts(condition: str, operator: str = "&&") -> list[str]:
    """The condition split at its top-level `&&` (or `operator`: `||` gives its sides)."""
    parts, depth, begun = [], 0, 0
    for position, char in enumerate(condition):
        depth += char == "("
        depth -= char == ")"
        if depth == 0 and condition.startswith(operator, position):
            parts.append(condition[begun:position])
            begun = position + len(operator)
    return [*parts, condition[begun:]]


def conditions(text: str) -> list[tuple[Comparison, ...]]:
    """Each refusal as the conjunction of the comparisons its top-level conjuncts make: an `if`
    whose body starts by switching the query to no backend, and a negated group `!(...)` of a
    support condition (TE 2.6 - 2.9 write their cuDNN-bug refusals so, #1960: `!((cudnn ==
    91100 || cudnn == 91200) && is_training && sm_arch_ == 90 && ...)`). A conjunct with `||`
    holds where its first side does, and gives that side's comparisons where it is one; a
    negated conjunct (`!(a && b)`) is left out: it holds for most values."""
    found = []
    for match in re.finditer(r"\bif\s*\(|!\s*\(", text):
        parsed = _condition_at(text, match.start())
        if parsed is None:
            continue
        condition, body = parsed
        if match.group(0).startswith("if"):
            after = text[body:].lstrip().lstrip("{")
            if not _NO_BACKEND.match(after):
                continue
        atoms = tuple(
            comparison
            for conjunct in _conjuncts(condition)
            if not conjunct.strip().startswith("!(")
            for comparison in (*_comparisons(_first_side(conjunct), 0), *_flag(conjunct))
        )
        if len({atom.input for atom in atoms}) >= 3:
            found.append(tuple(atom._replace(line=_line_of(text, match.start())) for atom in atoms))
    return found


def _first_side(conjunct: str) -> str:
    """`a` of a conjunct `(a || b)` where `a` is one comparison, else the whole conjunct (whose
    comparisons then all hold at once) or nothing (a side that is no single comparison)."""
    bare = conjunct.strip()
    while bare.startswith("(") and _condition_at(bare, 0) == (bare[1:-1], len(bare)):
        bare = bare[1:-1].strip()
    sides = _conjuncts(bare, "||")
    if len(sides) == 1:
        return conjunct
    return sides[0] if len(list(_comparisons(sides[0], 0))) == 1 else ""
