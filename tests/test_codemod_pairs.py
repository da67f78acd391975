"""Before/after pairs for the codemod, one per TE dialect (libcst `CodemodTest` style).

Each `codemod_pairs/NAME.before.py` is a small synthetic selector of one dialect's shape; its
`NAME.after.py` is exactly what the codemod must produce (absent when nothing may change).
Real releases are covered by `test_codemod_corpus.py`.
"""

import contextlib
from pathlib import Path

import libcst as cst
import pytest
from libcst.codemod import CodemodContext, CodemodTest, SkipFile

from codemods.apply import transform
from codemods.command import InsertSelectorGuards
from selector_patch.registry import HAZARDS, Hazard
from whole_tree import whole_tree

PAIRS = Path(__file__).parent / "codemod_pairs"

#: What the codemod must decide for each pair.
EXPECTED_STATUSES = {
    # TE 2.15 - 2.18: FA4 switched off below sm80 only
    "te2_fa4": {
        "TEA001": "inserted", "TEA002": "inserted", "TEA003": "inserted", "TEA004": "inserted",
        "TEA005": "inserted",
    },
    # TE 2.19 on: FA4 switched off below sm90
    "te2_dispatcher": {
        "TEA001": "inserted", "TEA002": "inserted", "TEA003": "inserted", "TEA004": "inserted",
        "TEA005": "already-guarded",
    },
    "te2_seed_guard": {
        "TEA001": "inserted", "TEA002": "inserted", "TEA003": "inserted", "TEA004": "inserted",
        "TEA005": "already-guarded",
    },
    "te2_no_fa4": {
        "TEA001": "not-applicable", "TEA002": "inserted",
        "TEA003": "not-applicable", "TEA004": "not-applicable", "TEA005": "not-applicable",
    },
    "te21_module_globals": {
        "TEA001": "not-applicable", "TEA002": "inserted",
        "TEA003": "not-applicable", "TEA004": "not-applicable", "TEA005": "not-applicable",
    },
    "te18_keyword_inputs": {
        "TEA001": "not-applicable", "TEA002": "inserted",
        "TEA003": "not-applicable", "TEA004": "not-applicable", "TEA005": "not-applicable",
    },
    "te1_allowlist_excludes": {
        "TEA001": "not-applicable", "TEA002": "already-guarded",
        "TEA003": "not-applicable", "TEA004": "not-applicable", "TEA005": "not-applicable",
    },
    "main_requires_backward": {
        "TEA001": "already-guarded", "TEA002": "inserted", "TEA003": "inserted", "TEA004": "inserted",
        "TEA005": "already-guarded",
    },
}  # fmt: skip
#: No pair reads `pad_between_seqs`: the head-dim-256 seqused hazards cannot apply to any.
for _statuses in EXPECTED_STATUSES.values():
    _statuses.update(TEA006="not-applicable", TEA007="not-applicable")


class _Pair(CodemodTest):
    TRANSFORM = InsertSelectorGuards

    def runTest(self) -> None:  # pragma: no cover - unittest needs a test method to exist
        pass


@pytest.mark.parametrize("name", sorted(EXPECTED_STATUSES))
def test_pair(name: str) -> None:
    before = (PAIRS / f"{name}.before.py").read_text()
    after_path = PAIRS / f"{name}.after.py"
    unchanged = not after_path.exists()
    after = before if unchanged else after_path.read_text()
    _Pair().assertCodemod(before, after, expected_skip=unchanged)


@pytest.mark.parametrize("name", sorted(EXPECTED_STATUSES))
def test_pair_statuses(name: str) -> None:
    command = InsertSelectorGuards(CodemodContext())
    with contextlib.suppress(SkipFile):  # raised when there is nothing to insert
        command.transform_module(cst.parse_module((PAIRS / f"{name}.before.py").read_text()))
    assert command.plan.statuses == EXPECTED_STATUSES[name]


@pytest.mark.parametrize(
    "name", sorted(p.name.removesuffix(".after.py") for p in PAIRS.glob("*.after.py"))
)
def test_after_is_a_fixed_point(name: str) -> None:
    """A second run changes nothing: the analyzer finds its own guards."""
    after = (PAIRS / f"{name}.after.py").read_text()
    _Pair().assertCodemod(after, after, expected_skip=True)


def test_a_hazard_declared_twice_gets_one_guard() -> None:
    """A registry entry pasted into the config under a new id is covered by the first guard."""
    twin = Hazard.from_mapping({**HAZARDS[0].to_mapping(), "id": "TEA011"})
    before = (PAIRS / "te2_fa4.before.py").read_text()
    patched, statuses = transform(before, [*HAZARDS, twin])
    assert patched == (PAIRS / "te2_fa4.after.py").read_text()
    assert statuses["TEA011"] == "already-guarded"


#: Edits of `te2_fa4.before.py` at the edges of what `python -m codemods.apply` hands libcst:
#: only the runs of statements that receive a statement, as whole lines: at the top level the
#: statements themselves, in a block each anchor with its neighbours (`insert._segments`).
RUN_EDGES = {
    "an import sharing its line": (
        "from dataclasses import dataclass, fields\n",
        "from dataclasses import dataclass, fields; import sys\n",
    ),
    "an import continued by a backslash": (
        "from dataclasses import dataclass, fields\n",
        "from dataclasses import dataclass, \\\n    fields\n",
    ),
    "a decorated selector": (
        "def get_attention_backend(",
        "@staticmethod\ndef get_attention_backend(",
    ),
    "comments around the class": (
        "@dataclass(eq=True)\n",
        "# the params\n@dataclass(eq=True)  # hashable\n# (TE's cache key)\n",
    ),
    "no newline at the end": ("use_unfused_attention\n", "use_unfused_attention"),
    "a comment indented as the block above a guard's anchor": (
        "            use_fused_attention = False\n\n    # use_flash_attention may",
        "            use_fused_attention = False\n        # (its own)\n"
        "\n    # use_flash_attention may",
    ),
    "a comment indented as the anchor's own block, after it": (
        "        use_flash_attention_4 = False\n\n    # Filter: num_splits\n",
        "        use_flash_attention_4 = False\n        # FA4 needs sm80\n"
        "\n    # Filter: num_splits\n",
    ),
    "a statement sharing its line with the anchor's neighbour": (
        "    use_flash_attention_4 = use_flash_attention and use_flash_attention_4\n",
        "    use_flash_attention_4 = use_flash_attention and use_flash_attention_4; _ = 0\n",
    ),
    "a one-line suite beside an anchor": (
        "    if use_flash_attention_2 and not FlashAttentionUtils.is_installed:\n"
        "        use_flash_attention_2 = False\n",
        "    if use_flash_attention_2 and not FlashAttentionUtils.is_installed: pass\n",
    ),
}


@pytest.mark.parametrize("edge", sorted(RUN_EDGES))
def test_text_runs_match_the_whole_tree(edge: str) -> None:
    """`transform` (libcst parses the touched runs of lines) writes what the codemod writes on
    libcst's tree of the whole module, byte for byte."""
    old, new = RUN_EDGES[edge]
    before = (PAIRS / "te2_fa4.before.py").read_text()
    assert before.count(old) == 1
    before = before.replace(old, new)
    patched, _ = transform(before, HAZARDS)
    assert patched != before
    assert patched == whole_tree(before)


def test_text_runs_match_the_whole_tree_where_the_first_block_indents_otherwise() -> None:
    """libcst takes the module's first indented block for its default indentation, which a
    guard's own blocks take; a run parsed on its own would take its own (`_indented_as_the_file`).
    Here the first block indents by two spaces, the selector by four."""
    before = (PAIRS / "te2_fa4.before.py").read_text()
    old = "class FlashAttentionUtils:\n    version = "
    assert before.count(old) == 1
    before = before.replace(old, "class _Narrow:\n  pass\n\n\n" + old)
    patched, _ = transform(before, HAZARDS)
    assert patched != before
    assert patched == whole_tree(before)


def test_text_runs_match_the_whole_tree_with_crlf() -> None:
    """A run parsed on its own writes the file's line ending, not its wrapper's."""
    before = (PAIRS / "te2_fa4.before.py").read_text().replace("\n", "\r\n")
    patched, _ = transform(before, HAZARDS)
    assert "\r\n" in patched and "\n" not in patched.replace("\r\n", "")
    assert patched == whole_tree(before)


@pytest.mark.parametrize(
    "name", sorted(p.name.removesuffix(".after.py") for p in PAIRS.glob("*.after.py"))
)
def test_text_runs_write_every_pair(name: str) -> None:
    before = (PAIRS / f"{name}.before.py").read_text()
    assert transform(before, HAZARDS)[0] == (PAIRS / f"{name}.after.py").read_text()
