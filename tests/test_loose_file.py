"""A selector file alone (`git show REV:path > upstream.py`) answers as the release it came from.

The file is placed in that release's tree (`selector_patch.sources`, `matching`), so TE's kernel
wiring, its sibling modules and its version run beside it as they do in the release: `verify`,
the codemod's `--check`, flake8 and `snapshot` give the file alone the release's verdicts.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import alone
from packaging.version import Version
from test_flake8_sweep import flake8

from codemods.apply import main as codemod
from selector_patch.harness import load_selector
from selector_patch.scenario import Scenario
from selector_patch.snapshot import parse
from selector_patch.sources import CORPUS_RELEASES, resolve
from selector_patch.verify import verify

#: The releases with an FA4 path, whose hazards differ most between a tree and a file alone.
FA4_RELEASES = [v for v in CORPUS_RELEASES if Version(v) >= Version("2.15.0")]


def check(target: list[str], capsys) -> tuple[int, list]:
    status = codemod(["--check", "--format", "json", *target])
    return status, [entry["hazards"] for entry in json.loads(capsys.readouterr().out)]


@pytest.mark.parametrize("version", FA4_RELEASES)
def test_verify_and_check_of_a_file_alone_are_the_releases(
    version, release, release_reports, tmp_path, capsys
):
    """A selector several releases share (2.16.0 and 2.16.1) is taken as the newest's, saying
    so: named with `--te-version`, it is the older one's."""
    path = alone(release, tmp_path, version)
    same = [v for v in FA4_RELEASES if release(v).path.read_bytes() == path.read_bytes()]
    source = resolve(str(path))
    assert source.te_version == same[-1]
    if len(same) > 1:
        assert source.assumption.startswith(f"TE tree assumed: {same[-1]}'s, the newest release")
        source = resolve(str(path), version)
    assert (source.te_version, source.assumption, source.root) == (
        version,
        None,
        release(version).root,
    )
    reports = {report.id: report.to_json() for report in verify(load_selector(source))}
    assert reports == {i: report.to_json() for i, report in release_reports(version).items()}
    assert check([str(path)], capsys) == check(["--te", version], capsys)


def test_flake8_on_files_alone_is_as_on_the_releases(release, tmp_path):
    paths = {
        version: (release(version).path, alone(release, tmp_path, version))
        for version in FA4_RELEASES
    }
    found = flake8(*(path for pair in paths.values() for path in pair))
    for in_tree, loose in paths.values():
        codes = [sorted(code for path, code in found if path == p) for p in (in_tree, loose)]
        assert codes[0] == codes[1] and codes[0]


def test_a_snapshot_of_a_file_alone_is_the_releases(own_selection):
    """The session's load of the release against the file alone (`own_selection`'s two)."""
    release_text, loose_text = own_selection("2.20.2")
    released, loose = parse(release_text, "release"), parse(loose_text, "loose")
    assert (loose.te_version, loose.selector) == ("2.20.2", "upstream.py")
    assert loose.grid == released.grid
    assert loose.outcomes == released.outcomes


#: TE's git history (a bare clone), where the machine has one: TE's main branch of mid-2024,
#: before 1.9, with the keyword-parameter selector.
TE_HISTORY = Path("/work/.mirror/NVIDIA+TransformerEngine/repo")
KEYWORD_DIALECT = ("56e0b351d", "transformer_engine/pytorch/attention.py")


def test_a_selector_from_before_1_9_runs_as_te_ran_it(release, tmp_path):
    """Its `FusedAttnBackend` is TE's own (`cpp_extensions`), so "FusedAttention preference on
    Hopper+" holds on sm90; alone, a stand-in never equal to cuDNN's answer left FlashAttention."""
    import subprocess

    if not TE_HISTORY.is_dir():
        pytest.skip(f"no TE git history at {TE_HISTORY}")
    revision, path_in_tree = KEYWORD_DIALECT
    path = tmp_path / "upstream.py"
    path.write_bytes(
        subprocess.run(
            ["git", "--git-dir", str(TE_HISTORY), "show", f"{revision}:{path_in_tree}"],
            capture_output=True,
            check=True,
        ).stdout
    )
    source = resolve(str(path))
    assert (source.te_version, source.root) == (None, release("1.9.0.post1").root)
    assert source.assumption.startswith("TE tree assumed: 1.9.0.post1's, the release nearest")
    selector = load_selector(source)
    assert "qkv_type" in selector.params_fields and "is_training" not in selector.params_fields
    hopper = selector.select(Scenario(compute_capability=(9, 0)))
    assert (hopper.backend, hopper.available) == ("FusedAttention", (True, True, True))
    assert any("FusedAttention preference on Hopper+" in line for line in hopper.log)
    without_tree = load_selector(source._replace(root=None, placed=None))
    assert without_tree.select(Scenario(compute_capability=(9, 0))).backend == "FlashAttention"


def test_the_miner_on_a_file_alone_is_the_releases(release, tmp_path, capsys):
    """TE's calls into the kernel (`backends.py`) are read beside the file too: the same sites,
    verdicts and counts per class (TE 2.18.0 and flash-attn-4 4.0.0b24, as the issue ran)."""
    from lint_plugin.mine.__main__ import main as mine

    path = alone(release, tmp_path, "2.18.0")
    reports = []
    for target in (["--te", "2.18.0"], ["--te", str(path), "--te-version", "2.18.0"]):
        status = mine([*target, "--flash-attn-4", "4.0.0b24", "--json", "--quiet"])
        report = json.loads(capsys.readouterr().out)
        reports.append((status, report["counts"], report["verdicts"], report["te"]["version"]))
    assert reports[0] == reports[1]
    assert reports[0][1]["UNGUARDED"] and reports[0][1]["unreachable"]


def test_a_diff_states_what_each_file_alone_runs_without(capsys):
    """A selector written from scratch matches no release: each side's result says so."""
    from selector_patch.__main__ import main

    fork = Path(__file__).parent / "fork_shapes" / "set_literal_guard.py"
    assert main(["diff", str(fork), str(fork), "--quiet"]) == 0
    header = capsys.readouterr().out.splitlines()[:5]
    stated = [line.partition(": ")[0] for line in header if "no TE tree: no release's" in line]
    assert stated == ["A", "B"]
