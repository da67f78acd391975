"""`--emit-tests`: the test module the codemod writes for its guards, run by a real pytest.

For checkouts of TE 2.14.1 (TEA002 only: no FA4 path), 2.17.1 and 2.20.2 (a copy of the cached
release tree), the codemod inserts the guards and writes the module; the same module is placed
beside an unpatched copy of the tree. One pytest subprocess runs all six: before the guards
exactly the witness cases fail, after them every case passes.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
from pathlib import Path

import black
import libcst as cst
import pytest
from libcst.codemod import CodemodContext

from codemods.apply import main
from codemods.command import InsertSelectorGuards
from codemods.selector_tests import FILENAME

VERSIONS = ("2.14.1", "2.17.1", "2.20.2")
#: Where each checkout keeps its emitted tests, relative to the checkout root.
TESTS = Path("tests") / "pytorch" / "attention"
REPO = Path(__file__).resolve().parent.parent


def checkout(release, version: str, where: Path) -> Path:
    root = where / "TransformerEngine"
    shutil.copytree(release(version).root, root)
    return root


@pytest.fixture(scope="module")
def emitted(release, tmp_path_factory) -> dict[str, Path]:
    """Per release, the checkout the codemod patched and wrote the test module into."""
    trees = {}
    for version in VERSIONS:
        root = checkout(release, version, tmp_path_factory.mktemp(f"after-{version}"))
        assert main([str(root), "--emit-tests", str(root / TESTS)]) == 0
        trees[version] = root
    return trees


@pytest.fixture(scope="module")
def outcomes(release, emitted, tmp_path_factory) -> dict[tuple[str, str], dict[str, str]]:
    """`(version, "before" | "after")`: test name -> outcome, from one pytest subprocess."""
    places = {}
    for version, patched in emitted.items():
        unpatched = checkout(release, version, tmp_path_factory.mktemp(f"before-{version}"))
        (unpatched / TESTS).mkdir(parents=True)
        shutil.copyfile(patched / TESTS / FILENAME, unpatched / TESTS / FILENAME)
        places[(version, "before")] = unpatched / TESTS / FILENAME
        places[(version, "after")] = patched / TESTS / FILENAME
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--import-mode=importlib"]
    cwd = tmp_path_factory.getbasetemp()
    completed = subprocess.run(
        [*command, "-q", "-rA", *map(str, places.values())], capture_output=True, text=True, cwd=cwd
    )
    assert completed.returncode in (0, 1), completed.stdout + completed.stderr
    results: dict[tuple[str, str], dict[str, str]] = {key: {} for key in places}
    by_path = {place.resolve(): key for key, place in places.items()}
    for line in completed.stdout.splitlines():
        outcome, _, nodeid = line.partition(" ")
        if outcome in ("PASSED", "FAILED", "SKIPPED", "ERROR"):
            path, _, name = nodeid.partition(" - ")[0].partition("::")
            results[by_path[(cwd / path).resolve()]][name] = outcome
    return results


@pytest.mark.parametrize("version", VERSIONS)
def test_module_fails_on_exactly_its_witnesses_before_and_passes_after(outcomes, version):
    before, after = outcomes[(version, "before")], outcomes[(version, "after")]
    witnesses = {name for name in before if "_witness_" in name}
    assert witnesses and set(before) - witnesses, before  # both kinds of case
    assert {name for name, outcome in before.items() if outcome != "PASSED"} == witnesses
    assert {name for name, outcome in before.items() if outcome == "FAILED"} == witnesses
    assert set(after) == set(before) and set(after.values()) == {"PASSED"}


def test_each_release_gets_the_hazards_the_codemod_inserted(emitted):
    tests = {v: (root / TESTS / FILENAME).read_text() for v, root in emitted.items()}
    tables = {v: re.findall(r"^(TEA\d+)_WITNESSES = \{", text, re.M) for v, text in tests.items()}
    assert tables == {
        "2.14.1": ["TEA002"],  # no FA4 path yet
        "2.17.1": ["TEA001", "TEA002", "TEA003", "TEA004", "TEA005"],
        # TE's own filters guard TEA005 (its FA4 filter below sm90) and TEA006/007 (THD with
        # padding between sequences) in 2.17.1
        "2.20.2": ["TEA001", "TEA002", "TEA003", "TEA004", "TEA006", "TEA007"],
    }
    assert "def test_tea005_witness_does_not_select_fa4(te_selector, case):" in tests["2.17.1"]
    assert "def test_tea005_control_keeps_fa4(te_selector, case):" in tests["2.17.1"]
    assert "def test_tea001_witness_does_not_select_fa4(te_selector, case):" in tests["2.20.2"]
    assert "def test_tea002_control_keeps_fa2(te_selector, case):" in tests["2.20.2"]
    assert (
        '    "sm120-fa4_4.0.0b24-eval-fa4_only": {\n'
        '        "compute_capability": (12, 0),\n'
        '        "flash_attn_4": "4.0.0b24",\n'
        '        "deterministic": True,\n'
        '        "training": False,\n'
        '        "backward": True,\n'
    ) in tests["2.20.2"]


@pytest.mark.parametrize("line_length", [88, 100])
def test_module_is_black_clean_and_finds_its_checkout(emitted, line_length):
    text = (emitted["2.20.2"] / TESTS / FILENAME).read_text()
    with pytest.raises(black.NothingChanged):
        black.format_file_contents(text, fast=False, mode=black.Mode(line_length=line_length))
    assert "return load_te_selector(Path(__file__).resolve().parents[3])" in text
    assert str(emitted["2.20.2"]) not in text  # no absolute path


def test_second_run_changes_nothing_and_a_changed_file_needs_force(emitted, release, capsys):
    root = emitted["2.20.2"]
    selector, module = release("2.20.2").path, root / TESTS / FILENAME
    patched = root / selector.relative_to(release("2.20.2").root)
    written = module.read_bytes()
    assert main([str(root), "--emit-tests", str(root / TESTS)]) == 0
    assert module.read_bytes() == written and patched.read_text() != selector.read_text()

    patched.write_bytes(selector.read_bytes())  # the guards reverted: the codemod inserts again
    module.write_text("# the fork's own edits\n")
    assert main([str(root), "--emit-tests", str(root / TESTS)]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"{module}: exists with other content; pass --force to replace it"
    )
    assert patched.read_bytes() == selector.read_bytes()  # nothing written
    assert main([str(root), "--emit-tests", str(root / TESTS), "--force"]) == 0
    assert module.read_bytes() == written


@pytest.mark.parametrize(
    "args, cause",
    [(["--check", "."], "not with --check/--diff"), ([".", "other"], "takes one SOURCE")],
)
def test_emit_tests_where_nothing_is_written_is_a_usage_error(tmp_path, capsys, args, cause):
    with pytest.raises(SystemExit) as exit:
        main([*args, "--emit-tests", str(tmp_path)])
    assert exit.value.code == 2 and cause in capsys.readouterr().err


def test_emit_tests_for_a_release_is_refused(tmp_path, capsys):
    assert main(["--te", "2.20.2", "--emit-tests", str(tmp_path)]) == 2
    assert capsys.readouterr().err == (
        "2.20.2: --emit-tests needs a checkout or file to write, not a release\n"
    )
    assert not (tmp_path / FILENAME).exists()


def test_a_selector_the_harness_cannot_run_is_one_line_and_nothing_is_written(tmp_path, capsys):
    """The synthetic pair's selector returns four values, not TE's five or six."""
    selector = tmp_path / "utils.py"
    shutil.copyfile(REPO / "tests" / "codemod_pairs" / "te2_fa4.before.py", selector)
    before = selector.read_bytes()
    assert main([str(selector), "--emit-tests", str(tmp_path / "tests")]) == 2
    assert capsys.readouterr().err == (
        f"{tmp_path / 'tests' / FILENAME}: cannot run the selector to choose the cases:"
        f" {selector}: get_attention_backend returned 4 items (TE returns 6 or 5), and its"
        " return statement does not name them as TE does\n"
    )
    assert selector.read_bytes() == before and not (tmp_path / "tests").exists()


def test_libcst_command_takes_the_same_options(emitted, release, tmp_path):
    """`add_args` offers them to `python -m libcst.tool codemod`; the module is the same."""
    parser = argparse.ArgumentParser()
    InsertSelectorGuards.add_args(parser)
    options = vars(parser.parse_args(["--emit-tests", str(tmp_path / "tests"), "--force"]))
    assert options == {"hazard_ids": [], "emit_tests": str(tmp_path / "tests"), "force": True}
    root = checkout(release, "2.20.2", tmp_path)
    selector = root / release("2.20.2").path.relative_to(release("2.20.2").root)
    directory = root / TESTS
    command = InsertSelectorGuards(
        CodemodContext(filename=str(selector)), emit_tests=str(directory)
    )
    command.transform_module(cst.parse_module(selector.read_text()))
    emitted_by_apply = (emitted["2.20.2"] / TESTS / FILENAME).read_text()
    assert (directory / FILENAME).read_text() == emitted_by_apply
