"""TEA006 / TEA007, FlashAttention 4 chosen for head dim 256 with padding between sequences on
SM 10.x / 11.0, on the real releases.

flash-attn-4's dedicated head-dim-256 kernels (4.0.0b11 on; `arch // 10 in [10, 11]`) assert
that no per-sequence lengths (`seqused_q` / `seqused_k`) are given: the forward until 4.0.0b31,
the backward until 4.0.0b33. TE 2.19 and newer pass them whenever there is padding between
sequences; 2.15 - 2.18 pass none and switch FA4 off for THD with such padding. Checked here:

- the evidence, in the flash-attn-4 wheels themselves: the asserts, their lines, the releases
  that dropped them;
- after the codemod and with the runtime patch, on 2.19.0 and 2.20.2: no such request selects
  an FA4 that refuses it, a fixed FA4 release keeps FA4 (4.0.0b32's forward, 4.0.0b36), and
  every control chooses as unpatched; unpatched, every witness selects FA4 (not vacuous).
The codemod's and flake8's verdicts per release (inserted on 2.19+, already guarded on 2.15 -
2.18 by TE's THD filter, which the analysis reads through TE's own `get_qkv_format`) are
asserted with the other hazards' in `test_codemod_corpus.py` and `test_analysis_corpus.py`.
"""

from __future__ import annotations

import ast

import pytest
from packaging.version import Version
from fa4_requests import FA4, NOT_FA4, PATCHES, UNCHANGED, assert_table, fa4_only

from selector_patch.registry import FA4_INTERFACE, PACKED_WITH_PADDING, SM10X_SM11X, get_hazard
from selector_patch.scenario import Scenario
from selector_patch.sources import wheel_tree

FORWARD, BACKWARD = get_hazard("TEA006"), get_hazard("TEA007")
#: Releases around each change: before the dedicated kernels, their first, the seed's, the
#: last with the forward assert, the forward fixed, the last with the backward assert, fixed.
EVIDENCE_RELEASES = ("4.0.0b10", "4.0.0b11", "4.0.0b24", "4.0.0b30", "4.0.0b31", "4.0.0b32")
#: Both asserts; the forward's only; neither.
TABLE_RELEASES = ("4.0.0b24", "4.0.0b32", "4.0.0b36")
SEQUSED_TE = ("2.19.0", "2.20.2")


def seqused_assert(version: str, function: str) -> int | None:
    """The line of `function`'s `assert seqused_q is None and seqused_k is None`, if any."""
    module = ast.parse((wheel_tree("flash-attn-4", version) / FA4_INTERFACE).read_text())
    (definition,) = [n for n in module.body if getattr(n, "name", None) == function]
    for node in ast.walk(definition):
        if isinstance(node, ast.Assert) and ast.unparse(node.test) == (
            "seqused_q is None and seqused_k is None"
        ):
            return node.lineno
    return None


@pytest.mark.parametrize("version", EVIDENCE_RELEASES)
@pytest.mark.parametrize(
    ("hazard", "function"), [(FORWARD, "_flash_attn_fwd"), (BACKWARD, "_flash_attn_bwd")]
)
def test_the_dedicated_kernels_refuse_seqused_in_the_affected_releases_only(
    version, hazard, function
):
    evidence = hazard.evidence
    line = seqused_assert(version, function)
    assert (line is not None) == evidence.affects(version), (version, function)
    if line is None:
        return
    source = (wheel_tree("flash-attn-4", version) / evidence.file).read_text().splitlines()
    message = evidence.text.partition(", ")[2]
    assert source[line].strip() == message  # the message, on the continuation line
    newest_affected = max((v for v in EVIDENCE_RELEASES if evidence.affects(v)), key=Version)
    if version == newest_affected:
        assert line == evidence.line
    else:  # the reference names the first affected release's line and the seed's
        named = {"4.0.0b11": f"4.0.0b11 (line {line};", "4.0.0b24": f"4.0.0b24: line {line})"}
        assert named.get(version, "") in evidence.reference


def cases(te_version: str, fa4: str) -> dict[str, tuple[Scenario, object]]:
    """Head dim 256 on packed sequences with padding between them, FA4 alone with fused
    attention off: a request FA4 `fa4` refuses must not select it; the rest as unpatched."""
    base = fa4_only(te_version, fa4).with_changes(
        {**PACKED_WITH_PADDING, "head_dim_qk": 256, "head_dim_v": 256, "pad_between_seqs": True}
    )
    modes = {"training": {}, "eval with backward": {"training": False}}
    modes["forward only"] = {"backward": False}
    table: dict[str, tuple[Scenario, object]] = {}
    for arch in SM10X_SM11X:
        sm = Scenario(compute_capability=arch).sm
        for mode, changes in modes.items():
            scenario = base.with_changes({"compute_capability": arch, **changes})
            table[f"{sm} {mode}"] = (scenario, expected(scenario))
            for control in {c.name: c for c in (*FORWARD.controls, *BACKWARD.controls)}.values():
                moved = scenario.with_changes(control.changes)
                table[f"{sm} {mode}, {control.name}"] = (moved, expected(moved))
    return table


def expected(scenario: Scenario) -> object:
    """Not FA4 where one of the two refusals holds (a control of one hazard may stay inside
    the other: 4.0.0b31's backward still refuses), else the unpatched selector's answer."""
    refused = any(hazard.triggered_by(scenario) for hazard in (FORWARD, BACKWARD))
    return NOT_FA4 if refused else UNCHANGED


@pytest.mark.parametrize("patch", PATCHES)
@pytest.mark.parametrize("te_version", SEQUSED_TE)
def test_fa4_hd256_seqused_table(release, load_te_selector, te_version, patch):
    source = release(te_version)
    assert_table(patch, source, load_te_selector(te_version).loaded, cases, TABLE_RELEASES)


@pytest.mark.parametrize("te_version", SEQUSED_TE)
def test_unpatched_selectors_reach_every_witness_of_the_table(load_te_selector, te_version):
    """The table is not vacuous: unpatched, every request FA4 refuses selects FA4, and 4.0.0b32
    refuses the requests with a backward only."""
    selector = load_te_selector(te_version).loaded
    refused: dict[str, list[str]] = {fa4: [] for fa4 in TABLE_RELEASES}
    for fa4 in TABLE_RELEASES:
        for name, (scenario, answer) in cases(te_version, fa4).items():
            if answer == NOT_FA4:
                assert selector.select(scenario).role == FA4, (te_version, fa4, name)
                if ", " not in name:
                    refused[fa4].append(name)
    modes = ("training", "eval with backward", "forward only")
    assert refused["4.0.0b24"] == [f"sm{a}{b} {m}" for a, b in SM10X_SM11X for m in modes]
    assert refused["4.0.0b32"] == [f"sm{a}{b} {m}" for a, b in SM10X_SM11X for m in modes[:2]]
    assert refused["4.0.0b36"] == []
