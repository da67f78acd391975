"""Equivalent spellings of a guard change no verdict.

Forks write the same filter in many ways: architectures in a set or a module-level constant,
`cc[0] == 12` for the 12.x family, `any(...)` over a tuple, De Morgan, nested `if`s, a loop with
an early `continue`, a local helper with early returns. `mutants.respell` rewrites the filters
of real selectors - TE 2.20.2 and 2.14.1 after the codemod (its own guards among them), and TE
1.13.0, whose head-dim allowlist is what guards TEA002 - into such spellings, one to three at a
time, and for every rewrite:

- the analyzer's verdict on every hazard (applicable, reachable) is the base's;
- the harness (TE's own code, respelt) agrees;
- the codemod plans what it planned for the base and inserts nothing: a guard in another
  spelling is recognised, never duplicated;
- flake8 and `codemods.apply --check` say what the harness says on every hazard (`judges`).

The spellings include guards moved out of the selector: a condition, or one conjunct of it,
into a module-level pure predicate called with positional or keyword arguments, architectures
into a module-level constant (a tuple, set or frozenset, or a comprehension over literals), and
read through a pure builtin (`any`, `all`, `min`, `max`, `len` over a comprehension, `sorted`),
a subscript of a module-level mapping or sequence, or a local computed from those (`PURE`).

The hypothesis profile sets how many rewrites run (`tests/conftest.py`), split evenly among the
bases; at least `MIN_REWRITES` do, besides the rewrites once found to break a verdict (`KNOWN`).
"""

from __future__ import annotations

import ast
import collections
import functools

import pytest
from fuzz_bases import base, write_tally
from hypothesis import given, reject, settings
from hypothesis import strategies as st
from judges import disagreements, harness_reports, static_verdicts, unexcused
from mutants import PURE, SPELLINGS, Mutation, named_site, respell

from lint_plugin.engine.analysis import analyze_source

SELECTOR = "get_attention_backend"
BASES = ("2.20.2+codemod", "2.14.1+codemod", "1.13.0")
#: Rewrites hypothesis draws at least, in all (split evenly among `BASES`).
MIN_REWRITES = 40
#: Rewrites applied, by operator, reported at the end of the module.
TALLY: collections.Counter[str] = collections.Counter()


@functools.lru_cache(maxsize=None)
def expected(name: str) -> tuple[dict, dict, dict]:
    """The base's analyzer verdicts, harness reachability and codemod statuses."""
    source, module = base(name)
    text = ast.unparse(module)
    return judged(name, source, text)


def judged(where: str, source, text: str) -> tuple[dict, dict, dict | None]:
    """The analyzer's verdicts, the harness's reachability and `--check`'s statuses; flake8 and
    `--check` must say what the harness says on every hazard (`judges`)."""
    verdicts = {v.hazard_id: (v.applicable, v.reachable) for v in analyze_source(text)}
    selector, reports = harness_reports(source, text)
    static = static_verdicts(source, text)
    found = disagreements(text, selector, reports, static)
    assert not unexcused(found), f"{where}: {unexcused(found)}"
    TALLY.update(f"flake8/--check excused, {d.excuse}" for d in found)
    return verdicts, {id: report.reachable for id, report in reports.items()}, static.statuses


rewrites = st.lists(
    st.builds(Mutation, st.sampled_from(SPELLINGS), st.integers(0, 2**16)), min_size=1, max_size=3
)


#: Rewrites that once broke a verdict: the first rewrite's operator and the words naming its
#: site in 2.20.2 after the codemod (`named_site`), then later rewrites' operators, each taking
#: the first site left (for De Morgan, the loop's `if` that `continue` made).
KNOWN = {
    # A site an earlier rewrite made: the loop's `if`, then De Morgan on it.
    "loop-then-de-morgan": [("set_display", "((12, 0), (12, 1))"), "continue", "not"],
    # One conjunct of a codemod guard (its architectures: TEA002's, one of SM 12.x's) as a
    # predicate.
    "tea002-architectures-as-predicate": [("conjunct_predicate", "((8, 6), (8, 9), (")],
    "sm12x-architectures-as-predicate-then-a-frozenset": [
        ("conjunct_predicate", "in ((12, 0), (12, 1))`"),
        "frozenset_constant",
    ],
}


# One test per base, so that the workers share them (one test of all three was the suite's
# longest, a minute that ran alone at its end); the profile's count is split among them.
@pytest.mark.parametrize("name", BASES)
@settings(max_examples=max(MIN_REWRITES, settings().max_examples) // len(BASES) + 1)
@given(rewrites=rewrites)
def test_respelt_guards_keep_every_verdict(name, rewrites) -> None:
    keeps_every_verdict(name, rewrites)


@pytest.mark.parametrize("case", KNOWN)
def test_known_rewrites_keep_every_verdict(case) -> None:
    name = "2.20.2+codemod"
    _, module = base(name)
    first, *later = KNOWN[case]
    rewrites = [Mutation(first[0], named_site(module, SELECTOR, *first))]
    keeps_every_verdict(name, rewrites + [Mutation(operator, 0) for operator in later])


@pytest.mark.parametrize("operator", sorted(PURE))
def test_each_pure_spelling_keeps_every_verdict(operator) -> None:
    """Each pure spelling (a builtin over a module-level constant, a subscript of a module-level
    mapping or sequence, a local computed from them) at least once, whatever hypothesis draws:
    on the codemod's TEA001 / TEA002 guard (its architectures), and on one of TE's own."""
    for site in (0, 5):
        keeps_every_verdict("2.20.2+codemod", [Mutation(operator, site)])


def keeps_every_verdict(name: str, rewrites: list[Mutation]) -> None:
    source, module = base(name)
    respelt = respell(module, SELECTOR, rewrites)
    if respelt is None:
        reject()  # only hypothesis draws a rewrite with no site left
    compile(respelt.text, str(source.path), "exec")
    where = f"{name} {list(respelt.descriptions)}"
    verdicts, harness, statuses = judged(where, source, respelt.text)
    base_verdicts, base_harness, base_statuses = expected(name)
    assert verdicts == base_verdicts, f"{where}: analyzer {verdicts} != {base_verdicts}"
    assert harness == base_harness, f"{where}: harness {harness} != {base_harness}"
    assert statuses == base_statuses, f"{where}: codemod {statuses} != {base_statuses}"
    TALLY["rewrites"] += 1
    TALLY.update(f"{mutation.operator}" for mutation in respelt.mutations)


def test_every_spelling_applies_to_a_codemod_guard() -> None:
    """No operator is vacuous on the codemod's own output."""
    _, module = base("2.20.2+codemod")
    for operator in SPELLINGS:
        assert respell(module, SELECTOR, [Mutation(operator, 0)]) is not None, operator


@pytest.fixture(scope="module", autouse=True)
def report_tally(request):
    yield
    write_tally(request, "respelt guards", TALLY)
