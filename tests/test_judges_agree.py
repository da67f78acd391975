"""The harness and the static analysis agree on every hazard of every fixture and fork shape.

Every selector the tests keep is judged three times (`judges`): by the harness
(`selector_patch.verify`, TE's own code on a virtual device), by flake8 (the plugin's `TEA`
codes) and by `codemods.apply --check` (a missing guard). Per hazard, both static judges must
say what the harness says, except where the witness grid's limit excuses a static "reachable"
(`grid_limit.grid_limited`). The selectors:

- the fork shapes (`fork_shapes/`) and the codemod's before/after pairs (`codemod_pairs/`);
- the real bases the fuzzers rewrite (`fuzz_bases`: TE 2.20.2 and 2.14.1 as released and after
  the codemod, TE 1.13.0 as released) and the guarded selectors of `guarded_selectors` (the
  codemod's fix and the over-broad TEA001 guard);
- hypothesis mutants: a base broken by at most one `mutants.OPERATORS` mutation, respelt by
  one or two `mutants.SPELLINGS` (guards moved into module-level predicates and constants among
  them), so that the spellings are judged on wrong guards as well as right ones.

The two fuzzers apply the same judges to every selector they make: `test_fuzz_spellings` to
every rewrite, `test_fuzz_differential` to every mutant and kept regression
(`fuzz_regressions/`), sharing the harness run each makes anyway.

The rule examples of `lint_plugin.rule_examples` are not among them: none is a whole selector the harness
can run (they have no `AttentionParams` dataclass and return two flags); `test_rules` judges them.
Where the harness cannot run a fixture (`UNRUNNABLE`: the codemod's pairs are fragments of
selectors, `vendor_device` a fork for another vendor's GPU), the two static judges must agree
with each other, and the harness must still refuse it as it does now (a fixture it learns to
run joins the three-way judgement).
"""

from __future__ import annotations

import ast
import collections
from pathlib import Path

import pytest
from fuzz_bases import base, write_tally
from guarded_selectors import overbroad, patched
from hypothesis import given, reject
from hypothesis import strategies as st
from judges import MutantCrashed, disagreements, harness_reports, static_verdicts, unexcused
from mutants import OPERATORS, SPELLINGS, Mutation, mutate, respell

from selector_patch.harness import SelectionError
from selector_patch.sources import SelectorSource, resolve

SELECTOR = "get_attention_backend"
TESTS = Path(__file__).resolve().parent
FILES = sorted([*(TESTS / "fork_shapes").glob("*.py"), *(TESTS / "codemod_pairs").glob("*.py")])
BASES = ("2.20.2", "2.20.2+codemod", "2.14.1", "2.14.1+codemod", "1.13.0")
#: Fixtures the harness cannot run, and what it says: the codemod's pairs are selector fragments
#: (they return three or four flags, TE five or six, or take no `AttentionParams`), and
#: `vendor_device` asks for another vendor's GPU module.
UNRUNNABLE = {
    "codemod_pairs": r"returned [34] items \(TE returns 6 or 5\)|no attribute 'head_dim_qk'",
    "vendor_device": r"no attribute 'musa'",
}
#: Selectors judged and disagreements excused, reported at the end of the module.
TALLY: collections.Counter[str] = collections.Counter()


def assert_agree(where: str, source: SelectorSource, text: str) -> None:
    """Both static judges say what the harness says on every hazard of `text`.

    `MutantCrashed` where the selector's own code raises on the virtual device.
    """
    selector, reports = harness_reports(source, text)
    found = disagreements(text, selector, reports, static_verdicts(source, text))
    assert not unexcused(found), f"{where}: {unexcused(found)}"
    TALLY["judged by all three"] += 1
    TALLY.update(f"excused, {d.excuse}" for d in found)


def assert_static_judges_agree(where: str, source: SelectorSource, text: str) -> None:
    static = static_verdicts(source, text).reachable()
    assert static["flake8"] == static.get("--check"), f"{where}: {static}"
    TALLY["judged by flake8 and --check only"] += 1


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_fixture(path: Path) -> None:
    source, text = resolve(str(path)), path.read_text(encoding="utf-8")
    cannot_run = UNRUNNABLE.get(path.stem, UNRUNNABLE.get(path.parent.name))
    if cannot_run is None:
        assert_agree(path.name, source, text)
        return
    with pytest.raises((SelectionError, MutantCrashed), match=cannot_run):
        harness_reports(source, text)
    assert_static_judges_agree(path.name, source, text)


@pytest.mark.parametrize("name", BASES)
def test_base(name: str) -> None:
    source, module = base(name)
    assert_agree(name, source, ast.unparse(module))


@pytest.mark.parametrize("name", ["2.20.2", "2.14.1"])
def test_guarded_selectors(name: str) -> None:
    source, _ = base(name)
    text = source.path.read_text(encoding="utf-8")
    assert_agree(f"{name} patched", source, patched(text))
    if name == "2.20.2":  # the release whose determinism filter `overbroad` anchors to
        assert_agree(f"{name} overbroad", source, overbroad(text))


breaking = st.builds(Mutation, st.sampled_from(sorted(OPERATORS)), st.integers(0, 2**16))
spelling = st.builds(Mutation, st.sampled_from(SPELLINGS), st.integers(0, 2**16))


@given(
    name=st.sampled_from(BASES),
    mutations=st.lists(breaking, max_size=1),
    rewrites=st.lists(spelling, min_size=1, max_size=2),
)
def test_respelt_mutants(name, mutations, rewrites) -> None:
    source, module = base(name)
    mutant = mutate(module, SELECTOR, mutations)
    respelt = mutant and respell(ast.parse(mutant.text), SELECTOR, rewrites)
    if respelt is None:
        reject()
    where = f"{name} {[*mutant.descriptions, *respelt.descriptions]}"
    try:
        assert_agree(where, source, respelt.text)
    except MutantCrashed:
        TALLY["rejected: the mutant itself raises"] += 1
        reject()  # a mutant whose own code raises says nothing of the judges
    TALLY["respelt mutants"] += 1


def test_a_mutant_cpython_would_not_compile_is_told_apart() -> None:
    """Killing a binding of 1.13.0's selector can leave a helper's `nonlocal` without one: no
    judge is asked about code CPython refuses."""
    source, module = base("1.13.0")
    mutant = mutate(module, SELECTOR, [Mutation("wrap_kill", 222)])
    with pytest.raises(MutantCrashed, match="SyntaxError: no binding for nonlocal"):
        harness_reports(source, mutant.text)


@pytest.fixture(scope="module", autouse=True)
def report_tally(request):
    yield
    write_tally(request, "judges", TALLY)
