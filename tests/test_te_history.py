"""`python -m lint_plugin.mine --te-history`: TE's history read as classified changes.

Two histories: a real release pair (2.17.1 -> 2.18.0, whose 358-odd regions are a few causes:
the new NVTE_FLASH_ATTN_V2/V3/V4 switches, policy, and the #3056 fix, FA4 head dim 256 with a
sliding window on sm100+), and a git repository made here from one release's tree whose second
commit adds a filter TE has (FA3's dropout filter, deleted from the first), with a PR number in
its subject: the change is attributed to that commit and PR, and a fork without the filter
lacks the fix.
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import subprocess

import pytest
from conftest import NO_TE_CXX

from lint_plugin.mine.__main__ import main
from lint_plugin.mine.te_changes import ASSUMED, bridged, changes_of
from lint_plugin.mine.te_git import commits
from lint_plugin.mine.te_history import Version
from lint_plugin.mine.te_history_command import (
    EXIT_ERROR,
    BadInput,
    fork_lacks,
    mine,
    release_names,
    report_line,
)
from selector_patch.harness.config_fields import VERDICT_ASSUMED
from selector_patch.scenario import Scenario
from selector_patch.selection_diff.classify import FIX, POLICY, REGRESSION
from selector_patch.snapshot import Grid, Snapshot
from selector_patch.snapshot.outcome import Outcome, Pick
from selector_patch.sources import CORPUS_RELEASES

PAIR = ("2.17.1", "2.18.0")
#: The #3056 fix's line in TE 2.18.0.
SM100_WINDOW = "Disabling FlashAttention 4 as SM100 head_dim=256 does not support sliding-window"
SWITCH = "Disabling FlashAttention N due to NVTE_FLASH_ATTN=0 or NVTE_FLASH_ATTN_VN=0"
#: The git history's release: a small grid (no FA4), and FA3's dropout filter to add.
GIT_BASE = "2.2.0"
DROPOUT_FILTER = (
    "    # Filter: Dropout\n"
    "    if attention_dropout != 0.0 and use_flash_attention_3:\n"
    '        logger.debug("Disabling FlashAttention 3 for dropout")\n'
    "        use_flash_attention_3 = False\n"
)


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """The command's JSON for the pair, and its `--report` file."""
    report = tmp_path_factory.mktemp("history") / "report.txt"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["--te-history", *PAIR, "--json", "--quiet", "--report", str(report)])
    assert code == 0
    return json.loads(out.getvalue()), report.read_text().splitlines()


def test_a_release_pair_reads_as_its_few_causes(pair) -> None:
    result, lines = pair
    changes = result["changes"]
    assert [v["name"] for v in result["versions"]] == list(PAIR)
    assert lines == [report_line(change) for change in changes]
    assert {change["version"] for change in changes} == {"2.18.0"}
    by_cause = {change["cause"]: change for change in changes}
    switches = by_cause[SWITCH]
    assert switches["class"] == POLICY and "NVTE_* switch" in switches["reason"]
    assert switches["regions"] > 300
    (fix,) = [change for change in changes if change["words"].startswith(SM100_WINDOW)]
    assert fix["class"] == FIX and fix["direction"] == "off"
    assert fix["backend"] == "FlashAttention 4" and fix["before"] == "FlashAttention 4"
    assert set(fix["architectures"]) == {"sm100", "sm103", "sm110"} and not fix["leaves_out"]
    assert fix["witness"]["head_dim"] == 256
    assert len(changes) <= 5
    line = report_line(fix)
    assert line.startswith("2.18.0 | fix | FlashAttention 4 off | sm100") and SM100_WINDOW in line


@pytest.mark.parametrize(
    "given, expected",
    [
        ([], list(CORPUS_RELEASES)),
        (["2.17.1..2.18.0"], ["2.17.1", "2.18.0"]),
        (["..1.10.0"], ["1.9.0.post1", "1.10.0"]),
        (["2.19.0.."], ["2.19.0", "2.20.2"]),
        (["2.1.0", "2.2.0"], ["2.1.0", "2.2.0"]),
    ],
)
def test_releases_are_named_or_ranged(given, expected) -> None:
    assert release_names(given) == expected


@pytest.mark.parametrize("given", [["2.18.0"], ["2.17.1..9.9.9"]])
def test_a_history_of_fewer_than_two_known_releases_is_refused(given) -> None:
    with pytest.raises(BadInput):
        release_names(given)


def test_bad_input_is_one_line_and_exit_2(capsys, tmp_path) -> None:
    assert main(["--te-history", "2.17.1..9.9.9"]) == EXIT_ERROR
    assert main(["--te-history", "--te-history-git", str(tmp_path), "A..B"]) == EXIT_ERROR
    assert main(["--te-history", *PAIR, "--fork", str(tmp_path / "none")]) == EXIT_ERROR
    errors = capsys.readouterr().err.strip().splitlines()
    assert len(errors) == 3 and "9.9.9" in errors[0] and "not a git repository" in errors[1]
    assert "none" in errors[2]


def _git(repo, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.fixture(scope="module")
def history(release, tmp_path_factory):
    """A repository of two commits: GIT_BASE without FA3's dropout filter, then with it."""
    if shutil.which("git") is None:
        pytest.skip("no git")
    source = release(GIT_BASE)
    text = source.path.read_text()
    assert DROPOUT_FILTER in text
    repo = tmp_path_factory.mktemp("te")
    shutil.copytree(source.root / "transformer_engine", repo / "transformer_engine")
    (repo / "build_tools").mkdir()
    (repo / "build_tools" / "VERSION.txt").write_text(f"{GIT_BASE}\n")
    selector = repo / source.path.relative_to(source.root)
    selector.write_text(text.replace(DROPOUT_FILTER, ""))
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    identity = ("-c", "user.name=t", "-c", "user.email=t@t")
    _git(repo, *identity, "commit", "-qm", "A fork's tree")
    fork = tmp_path_factory.mktemp("fork") / "TransformerEngine"
    shutil.copytree(repo / "transformer_engine", fork / "transformer_engine")
    shutil.copytree(repo / "build_tools", fork / "build_tools")
    selector.write_text(text)
    _git(repo, *identity, "commit", "-qam", "Disable FA3 with dropout (#1234)")
    return repo, fork


@pytest.fixture(scope="module")
def mined(history):
    repo, _fork = history
    return mine(commits(str(repo), "HEAD~1..HEAD"), None, workers=2, quiet=True)


def test_a_git_history_attributes_each_change_to_its_commit_and_pr(history, mined) -> None:
    repo, _fork = history
    result, _grid = mined
    assert [v["name"] for v in result["versions"]] == [
        _git(repo, "rev-parse", "--short=10", f"HEAD{back}") for back in ("~1", "")
    ]
    (change,) = result["changes"]
    assert change["pr"] == "#1234" and change["commit"] == _git(repo, "rev-parse", "HEAD")
    assert change["class"] == FIX and change["words"] == "Disabling FlashAttention 3 for dropout"
    assert change["witness"]["attention_dropout"] > 0


def test_a_fork_lacks_the_fixes_whose_witness_it_answers_as_before(history, mined) -> None:
    repo, fork = history
    result, grid = mined
    assert fork_lacks(str(fork), grid, result["changes"], None) == result["changes"]
    assert fork_lacks(str(repo), grid, result["changes"], None) == []


def _snapshot(picks, fused_assumption=None) -> Snapshot:
    """A snapshot on a grid of one request per architecture, sm120 and sm121."""
    grid = Grid(((12, 0), (12, 1)), (), ("training",), (), (), ((),), 1, ((),))
    return Snapshot(None, "utils.py", "", fused_assumption, grid, [Outcome(p) for p in picks])


def _report(line: str, direction: str, backend: str) -> dict:
    cause = {
        "cause": line, "line": line, "side": "b" if direction == "off" else "a",
        "direction": direction, "backend": backend, "hazards": [], "configurations": 1,
        "regions": [1],
    }  # fmt: skip
    difference = {
        "region": "sm120: ...", "change": "...", "architectures": ["sm120"],
        "witness": {"compute_capability": [12, 0]}, "position": 0,
    }  # fmt: skip
    return {"causes": [cause], "differences": [difference]}


FA4 = Pick("FlashAttention", "FA4", "4.0.0b24")
UNFUSED = Pick("UnfusedDotProductAttention")
SM120_FIX = "Disabling FlashAttention 4 for deterministic backward on sm120: not supported"


def test_a_fix_for_sm120_alone_leaves_sm121_out_and_reopening_it_is_a_regression() -> None:
    fixes: dict[str, str] = {}
    before, fixed = _snapshot([FA4, FA4]), _snapshot([UNFUSED, FA4])
    (fix,) = changes_of(
        _report(SM120_FIX, "off", "FlashAttention 4"),
        Version("1.0", "1.0"), Version("1.1", "1.1"), before, fixed, fixes,
    )  # fmt: skip
    assert fix["class"] == FIX and fix["leaves_out"] == ["sm121"]
    assert fix["before"] == "FlashAttention 4"
    (reopened,) = changes_of(
        _report(SM120_FIX, "on", "FlashAttention 4"),
        Version("1.1", "1.1"), Version("1.2", "1.2"), fixed, before, fixes,
    )  # fmt: skip
    assert reopened["class"] == REGRESSION and "1.1's fix" in reopened["reason"]


def test_a_fused_change_against_an_assumed_answer_is_neither_fix_nor_regression() -> None:
    line = "Disabling FusedAttention as no backend supports the provided input"
    (change,) = changes_of(
        _report(line, "off", "FusedAttention"),
        Version("1.0", "1.0"), Version("1.1", "1.1"),
        _snapshot([FA4, FA4], "fused answer assumed: ..."), _snapshot([UNFUSED, FA4]), {},
    )  # fmt: skip
    assert change["class"] == ASSUMED


#: #2344's graph-capture refusal, as TE 2.10's C++ warns it.
GRAPH_CAPTURE = "for backward fused attention with graph capture requires cuDNN 9.15.1+"
#: The IMA's request: cuDNN 9.15.0, training, BSHD, `max_seqlen_kv % 128 != 0`, causal.
CAPTURED = Scenario(cudnn_version=(9, 15, 0), max_seqlen_kv=129, env=(("NVTE_FLASH_ATTN", "0"),))


@pytest.mark.skipif(NO_TE_CXX is not None, reason=str(NO_TE_CXX))
def test_graph_capture_is_process_state_every_release_can_be_asked(load_te_selector) -> None:
    """TE 2.9 has no `cuda_graph` field: asked under a capture, it selects as without one (the
    IMA's FusedAttention); 2.10 reads it and refuses, in its C++'s words."""
    captured = CAPTURED.with_changes({"cuda_graph": True})
    old = load_te_selector("2.9.0").loaded
    assert "cuda_graph" not in old.params_fields
    assert old.select(captured).backend == old.select(CAPTURED).backend == "FusedAttention"
    new = load_te_selector("2.10.0").loaded
    assert new.select(CAPTURED).backend == "FusedAttention"
    refused = new.select(captured)
    assert refused.backend != "FusedAttention"
    assert any(GRAPH_CAPTURE in line for line in refused.log)


KV_SM89 = "Disabling FusedAttention for KV caching for sm89"


def test_a_kv_cache_filter_widened_over_cudnn_versions_is_a_fix_each_time() -> None:
    """#1776 -> #2185: TE 2.4 keeps FusedAttention off sm89 KV caching below cuDNN 9.11 (a
    fix: a cuDNN range), 2.8 on every cuDNN, its line losing the bound (a fix: the widening)."""
    fixes: dict[str, str] = {}
    fused = Pick("FusedAttention", fused="F16_arbitrary_seqlen")
    before, after = _snapshot([fused, fused]), _snapshot([UNFUSED, fused])
    for release, line in (("2.4.0", f"{KV_SM89} and cuDNN < 9.11"), ("2.8.0", KV_SM89)):
        (change,) = changes_of(
            _report(line, "off", "FusedAttention"),
            Version("x", "x"), Version(release, release), before, after, fixes,
        )  # fmt: skip
        assert change["class"] == FIX, change["reason"]
    assert change["reason"].startswith("widens 2.4.0's fix")
    (unrelated,) = changes_of(
        _report("Disabling FusedAttention for KV caching", "off", "FusedAttention"),
        Version("x", "x"), Version("2.9.0", "2.9.0"), before, after, fixes,
    )  # fmt: skip
    assert unrelated["class"] == POLICY


FUSED = Pick("FusedAttention", fused="F16_arbitrary_seqlen")
REFUSED = "Disabling FusedAttention as cuDNN does not support the request on sm120"
NO_CXX = "fused answer assumed: F16_arbitrary_seqlen (no TE C++ for 1.1)"


def _release(name: str) -> Version:
    return Version(name, name)


def _changed(line: str, since: str, version: str, a: Snapshot, b: Snapshot) -> list[dict]:
    return changes_of(
        _report(line, "off", "FusedAttention"), _release(since), _release(version), a, b, {}
    )


@pytest.mark.parametrize("logged", [False, True])
def test_a_change_across_a_release_without_cxx_is_judged_between_its_neighbours(logged) -> None:
    """1.0 and 1.2 answer with TE's C++, 1.1 with an assumption: 1.1 -> 1.2's FusedAttention
    change is `assumed`, 1.0 -> 1.2's is TE's, reported at 1.2 saying 1.1's C++ is unknown, or
    at 1.1 where 1.1's own selector already logs its line (a Python filter)."""
    before, after = _snapshot([FUSED, FUSED]), _snapshot([UNFUSED, FUSED])
    unknown = _snapshot([FUSED, FUSED], NO_CXX)
    if logged:
        unknown.outcomes[0] = Outcome(UNFUSED, (REFUSED,))
    held = _changed(REFUSED, "1.1", "1.2", unknown, after)
    assert [change["class"] for change in held] == [ASSUMED]
    across = _changed(REFUSED, "1.0", "1.2", before, after)
    (change,) = bridged(across, held, [(_release("1.1"), unknown)])
    assert change["class"] == FIX and change["unknown_cxx"] == "1.1"
    assert change["version"] == ("1.1" if logged else "1.2")
    assert change["reason"].endswith("judged 1.0 -> 1.2: 1.1's C++ unknown")


@pytest.mark.parametrize("reached", [False, True])
def test_cudnn_s_assumed_verdict_makes_only_the_requests_that_reached_it_assumed(reached) -> None:
    """TE 2.20's compiled query leaves cuDNN's own check to a GPU: a change is `assumed` where
    its requests reached that check (their log says so), TE's own elsewhere."""
    note = f"{VERDICT_ASSUMED}: supported, for the 1 request(s) so far ..."
    after = _snapshot([FUSED, FUSED], note)
    after.outcomes[0] = Outcome(FUSED, (f"{VERDICT_ASSUMED}: supported",) if reached else ())
    (change,) = changes_of(
        _report(REFUSED, "on", "FusedAttention"), _release("1.0"), _release("1.1"),
        _snapshot([UNFUSED, FUSED]), after, {},
    )  # fmt: skip
    assert change["class"] == (ASSUMED if reached else POLICY)
