"""TEA005, FlashAttention 4 chosen for a backward on SM 8.x, on the real releases.

flash-attn-4's backward refuses every architecture below SM 9.0 while its forward runs on 8.x;
TE 2.15.0 - 2.18.0 switch FA4 off below sm80 only, so training and eval with a backward on
sm80, sm86, sm87 and sm89 pick FA4 and its first backward asserts. TE 2.19.0 switches FA4 off
below sm90 itself. Checked here:

- the evidence, in the flash-attn-4 wheels themselves;
- after the codemod and with the runtime patch, on 2.15.0 - 2.18.0: no SM 8.x call with a
  backward selects FA4, forward-only keeps it, sm90 and sm100 choose as unpatched;
- `selector_patch.install()` gives the table the codemod gives (`python -m selector_patch
  table SOURCE --patched`);
- flake8 reports TEA005 on the unpatched 2.15.0 - 2.18.0 selectors, not after the codemod and
  not on 2.19.0 or 2.20.2, where the codemod inserts nothing for it;
- the miner names the refusal TEA005, and finds it guarded once the codemod has run.
"""

from __future__ import annotations

import ast
import subprocess
import sys

import pytest
from fa4_requests import (
    FA4,
    FA4_RELEASES,
    NO_BACKEND,
    NOT_FA4,
    PATCHES,
    UNCHANGED,
    UNFUSED,
    assert_table,
    codemod,
    fa4_only,
)
from guarded_selectors import patched as with_guards
from packaging.version import Version

from codemods.apply import transform
from lint_plugin.mine.crosscheck import GUARDED, UNGUARDED, Judges, crosscheck
from lint_plugin.mine.declare import declarations
from selector_patch.registry import FA4_INTERFACE, HAZARDS, SM8X, get_hazard
from selector_patch.scenario import Scenario
from selector_patch.sources import CORPUS_RELEASES, wheel_tree
from selector_patch.table import build
from selector_patch.table.columns import architectures, table_columns

TEA005 = get_hazard("TEA005")
#: Releases with an FA4 path whose own FA4 filter stops at sm80.
BELOW_SM80_ONLY = [v for v in CORPUS_RELEASES if Version("2.15.0") <= Version(v) < Version("2.19")]
#: Releases that switch FA4 off below sm90 themselves.
BELOW_SM90 = ("2.19.0", "2.20.2")
BACKWARD = {"training": {}, "eval with backward": {"training": False}}
FORWARD_ONLY = {
    "forward-only training": {"backward": False},
    "forward-only eval": {"training": False, "backward": False},
}


def arch_assert(version: str, function: str) -> tuple[int, list[int]]:
    """The line of `function`'s `assert arch // 10 in [...]` and the families it admits."""
    module = ast.parse((wheel_tree("flash-attn-4", version) / FA4_INTERFACE).read_text())
    (definition,) = [n for n in module.body if getattr(n, "name", None) == function]
    for node in ast.walk(definition):
        if isinstance(node, ast.Assert) and isinstance(node.test, ast.Compare):
            left = ast.unparse(node.test.left)
            if left == "arch // 10" and isinstance(node.test.ops[0], ast.In):
                return node.lineno, ast.literal_eval(node.test.comparators[0])
    raise AssertionError(f"{version}: {function} tests no architecture family")


@pytest.mark.parametrize("version", ["4.0.0b5", *FA4_RELEASES])
def test_the_backward_refuses_sm8x_and_the_forward_accepts_it(version):
    evidence = TEA005.evidence
    line, families = arch_assert(version, "_flash_attn_bwd")
    assert families == [9, 10, 11, 12] and evidence.affects(version)
    assert 8 in arch_assert(version, "_flash_attn_fwd")[1]
    source = (wheel_tree("flash-attn-4", version) / evidence.file).read_text().splitlines()
    assert source[line - 1].strip() == evidence.text  # no other spelling in any release
    if version == FA4_RELEASES[-1]:
        assert line == evidence.line
    else:
        assert f"line {line}" in evidence.reference


def test_before_the_first_affected_release_the_forward_refuses_sm8x_too():
    assert 8 not in arch_assert("4.0.0b4", "_flash_attn_fwd")[1]
    assert not TEA005.evidence.affects("4.0.0b4")


def cases(te_version: str, fa4: str) -> dict[str, tuple[Scenario, object]]:
    """Each request and what the patched selector must answer: FA4 alone with unfused attention
    (its fallback), with nothing else (no backend), and with every backend TE has."""
    plain = fa4_only(te_version, fa4)
    everything = Scenario(flash_attn_4=fa4)  # FA2 2.8.3 installed, fused attention on
    no_unfused = {"env": {"NVTE_UNFUSED_ATTN": "0"}}
    table: dict[str, tuple[Scenario, object]] = {}
    for arch in SM8X:
        sm = Scenario(compute_capability=arch).sm
        at = {"compute_capability": arch}
        for mode, changes in BACKWARD.items():
            table[f"{sm} {mode}"] = (plain.with_changes({**at, **changes}), UNFUSED)
            alone = plain.with_changes({**at, **changes, **no_unfused})
            table[f"{sm} {mode}, unfused off"] = (alone, NO_BACKEND)
            table[f"{sm} {mode}, every backend"] = (
                everything.with_changes({**at, **changes}),
                NOT_FA4,
            )
        for mode, changes in FORWARD_ONLY.items():
            table[f"{sm} {mode}"] = (plain.with_changes({**at, **changes}), FA4)
            table[f"{sm} {mode}, every backend"] = (
                everything.with_changes({**at, **changes}),
                UNCHANGED,
            )
    for arch in ((9, 0), (10, 0)):
        sm = Scenario(compute_capability=arch).sm
        for mode, changes in {**BACKWARD, **FORWARD_ONLY}.items():
            for setting, base in (("", plain), (", every backend", everything)):
                scenario = base.with_changes({"compute_capability": arch, **changes})
                table[f"{sm} {mode}{setting}"] = (scenario, UNCHANGED)
    return table


@pytest.mark.parametrize("patch", PATCHES)
@pytest.mark.parametrize("te_version", BELOW_SM80_ONLY)
def test_fa4_sm8x_table(release, load_te_selector, te_version, patch):
    assert_table(patch, release(te_version), load_te_selector(te_version).loaded, cases)


@pytest.mark.parametrize("te_version", BELOW_SM80_ONLY)
def test_unpatched_selectors_reach_every_witness_of_the_table(load_te_selector, te_version):
    """The table is not vacuous: unpatched, every SM 8.x request with a backward selects FA4,
    with FA4 alone and with every backend TE has."""
    selector = load_te_selector(te_version).loaded
    for fa4 in FA4_RELEASES:
        for name, (scenario, expected) in cases(te_version, fa4).items():
            if expected in (UNFUSED, NO_BACKEND, NOT_FA4):
                assert selector.select(scenario).role == FA4, (te_version, fa4, name)


@pytest.mark.parametrize("te_version", BELOW_SM90)
def test_releases_with_te_s_own_filter_get_nothing_and_keep_fa4_off(
    release, load_te_selector, te_version
):
    text = release(te_version).path.read_text()
    assert transform(text, [TEA005]) == (text, {"TEA005": "already-guarded"})
    selector = load_te_selector(te_version).loaded
    for fa4 in FA4_RELEASES:
        for name, (scenario, expected) in cases(te_version, fa4).items():
            if expected in (UNFUSED, NO_BACKEND, NOT_FA4):
                assert selector.select(scenario).role != FA4, (te_version, fa4, name)


@pytest.mark.parametrize("te_version", BELOW_SM80_ONLY)
def test_the_runtime_patch_gives_the_codemod_s_table(release, te_version):
    """`table --patched` (the runtime patch) against the codemod's selector, on every column of
    every hazard: the same backend and version in every cell, on the releases that read
    `NVTE_FLASH_ATTN_V4` (2.18) and on those whose re-run sees FA4 as not installed instead
    (2.15 - 2.17, `selector_patch.runtime`)."""
    source = release(te_version)
    data = build(source, patched=True)
    unpatched, patched = data["variants"]
    codemodded = codemod(source)
    columns = table_columns(HAZARDS)
    hazard_cells = set()
    for arch, before, after in zip(
        architectures(HAZARDS), unpatched["rows"], patched["rows"], strict=True
    ):
        for column, unpatched_cell, cell in zip(columns, before["cells"], after["cells"]):
            expected = codemodded.select(column.on(arch))
            assert (cell["backend"], cell["flash_version"]) == (
                expected.backend,
                expected.flash_version,
            )
            assert cell["hazards"] == []
            if column.hazard is TEA005 and "TEA005" in unpatched_cell["hazards"]:
                hazard_cells.add((arch, column.label))
    witnesses = [c.label for c in columns if c.hazard is TEA005 and c.kind == "witness"]
    assert witnesses == ["training", "eval with backward"]
    assert hazard_cells == {(arch, label) for arch in SM8X for label in witnesses}


def flake8_codes(paths: list) -> dict[str, set[str]]:
    """Per path, the TEA codes real flake8 reports there."""
    result = subprocess.run(
        [sys.executable, "-m", "flake8", "--select=TEA", *map(str, paths)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode in (0, 1) and not result.stderr, result.stderr
    codes: dict[str, set[str]] = {str(path): set() for path in paths}
    for row in result.stdout.splitlines():
        path, _line, _col, message = row.split(":", 3)
        codes[path].add(message.split()[0])
    return codes


def test_flake8_reports_tea005_on_the_unpatched_selectors_only(release, tmp_path):
    unpatched = {version: release(version).path for version in (*BELOW_SM80_ONLY, *BELOW_SM90)}
    patched = {}
    for version in BELOW_SM80_ONLY:
        patched[version] = tmp_path / version / "utils.py"
        patched[version].parent.mkdir()
        patched[version].write_text(with_guards(unpatched[version].read_text()))
    codes = flake8_codes([*unpatched.values(), *patched.values()])
    reported = {version for version, path in unpatched.items() if "TEA005" in codes[str(path)]}
    assert reported == set(BELOW_SM80_ONLY)
    assert not [version for version, path in patched.items() if "TEA005" in codes[str(path)]]


def test_the_miner_names_the_refusal_tea005_and_finds_it_guarded_after_the_codemod(
    release, mined_kernel
):
    """`python -m lint_plugin.mine --te 2.18.0 --flash-attn-4 4.0.0b24`, as data: UNGUARDED on
    SM 8.x in TE's default environment, the registry's TEA005 (nothing new to declare), and
    guarded on the codemod's selector. sm70 and sm75 are not TEA005's: FA4's forward refuses
    them for any call, and TE keeps FA4 off there."""
    te = release("2.18.0")
    # through TE's calls, as the command mines: 2.18 passes FA4 no seqused, so the head-dim-256
    # seqused asserts (TEA006 / TEA007 on 2.19+) are unreachable through it; mined once per
    # test run (`mined_kernel`: `test_mine_after_codemod` judges the same cases)
    found = mined_kernel("flash-attn-4", "4.0.0b24", "2.18.0")

    def verdict(judged):
        (one,) = [
            v
            for v in judged
            if v.case.site.function == "_flash_attn_bwd"
            and v.case.site.text == TEA005.evidence.text
        ]
        return one

    before = crosscheck(found, Judges(te), known=HAZARDS)
    refusal = verdict(before)
    assert (refusal.status, refusal.matches) == (UNGUARDED, "TEA005")
    assert refusal.on(UNGUARDED) == SM8X and refusal.on(GUARDED) == ((7, 0), (7, 5))
    assert refusal.witness.env == () and refusal.witness.compute_capability in SM8X
    assert declarations(before, taken=[hazard.id for hazard in HAZARDS]) == {}
    after = crosscheck(found, Judges(te, text=with_guards(te.path.read_text())), known=HAZARDS)
    assert (verdict(after).status, verdict(after).matches) == (GUARDED, "TEA005")
    assert UNGUARDED not in {v.status for v in after}
