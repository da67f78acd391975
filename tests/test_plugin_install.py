"""The plugin as a fork maintainer meets it: `pip install te-attn-guards[harness]`, nothing else.

A fresh virtual environment gets this project's wheel (built from the working tree) and, beside
it, exactly the distributions its metadata requires for the `harness` extra, transitively. Those
are linked from the test environment rather than reinstalled: a real `pip install` of them into
a fresh environment (torch alone is 750 MB unpacked) takes some 40 s here, the linked
environment about 5. What the proof needs is that nothing outside the declared requirements is
importable, which holds either way. In it, a throwaway project runs the README's example test
against a checkout of TE 2.20.2 before and after the codemod, a selection snapshot test fails on
a deliberately changed selector and passes after `--te-snapshot-update`, and `pytest --help`
imports no torch.
"""

from __future__ import annotations

import email.parser
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parent.parent
#: What the wheel is built from: the packages and the files pyproject.toml names.
DISTRIBUTED = ("selector_patch", "lint_plugin", "codemods", "pyproject.toml", "README.md")
README_EXAMPLE = re.compile(r"<!-- The suite runs this file[^\n]*-->\n```python\n(.*?)```", re.S)


def build_wheel(directory: Path) -> Path:
    source = directory / "source"
    for name in DISTRIBUTED:
        if (REPO / name).is_dir():
            shutil.copytree(
                REPO / name, source / name, ignore=shutil.ignore_patterns("__pycache__")
            )
        else:
            shutil.copyfile(REPO / name, source / name)
    # No isolated build environment (nothing fetched): torch already requires setuptools>=77.
    pip = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation"]
    subprocess.run([*pip, "-w", str(directory), str(source)], check=True, capture_output=True)
    (wheel,) = directory.glob("te_attn_guards-*.whl")
    return wheel


def required(wheel: Path, extra: str) -> list[importlib.metadata.Distribution]:
    """The installed distributions `wheel[extra]` requires, transitively."""
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        metadata = email.parser.Parser().parsestr(archive.read(name).decode())
    pending = [(Requirement(text), extra) for text in metadata.get_all("Requires-Dist")]
    found: dict[str, importlib.metadata.Distribution] = {}
    while pending:
        requirement, wanted = pending.pop()
        if requirement.marker and not requirement.marker.evaluate({"extra": wanted}):
            continue
        key = canonicalize_name(requirement.name)
        if key in found:
            continue
        distribution = found[key] = importlib.metadata.distribution(requirement.name)
        assert requirement.specifier.contains(distribution.version, prereleases=True)
        for text in distribution.requires or ():
            for nested_extra in requirement.extras or {""}:
                pending.append((Requirement(text), nested_extra))
    return list(found.values())


def link_into(overlay: Path, distributions: list[importlib.metadata.Distribution]) -> None:
    """Each distribution's top-level files and directories, linked into `overlay`."""
    overlay.mkdir()
    for distribution in distributions:
        site = Path(distribution.locate_file(""))
        for top in {file.parts[0] for file in distribution.files or ()} - {".."}:
            if (site / top).exists() and not (overlay / top).exists():
                (overlay / top).symlink_to(site / top)


@pytest.fixture(scope="module")
def fresh_python(tmp_path_factory) -> Path:
    """The interpreter of an environment holding te-attn-guards[harness] and nothing else."""
    where = tmp_path_factory.mktemp("fresh")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where / "venv")], check=True)
    python = where / "venv" / "bin" / "python"
    wheel = build_wheel(where)
    pip = [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps"]
    subprocess.run([*pip, "--no-index", str(wheel)], check=True, capture_output=True)
    link_into(where / "harness-deps", required(wheel, "harness"))
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    (Path(site) / "harness-deps.pth").write_text(f"{where / 'harness-deps'}\n")
    return python


def run(python: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTEST_ADDOPTS")}
    return subprocess.run(
        [str(python), *args], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )


def test_the_environment_is_the_wheel_and_its_harness_requirements(fresh_python, tmp_path):
    probe = "import selector_patch, pytest, libcst; print(selector_patch.__file__)"
    located = run(fresh_python, "-c", probe, cwd=tmp_path)
    assert located.returncode == 0, located.stderr
    assert str(REPO) not in located.stdout and "site-packages" in located.stdout
    assert run(fresh_python, "-c", "import hypothesis", cwd=tmp_path).returncode == 1


def test_readme_example_fails_before_the_codemod_and_passes_after(fresh_python, release, tmp_path):
    checkout = tmp_path / "TransformerEngine"
    shutil.copytree(release("2.20.2").root, checkout)
    project = tmp_path / "project"
    project.mkdir()
    example = README_EXAMPLE.search((REPO / "README.md").read_text()).group(1)
    (project / "test_seeds.py").write_text(example)
    pytest_args = ("-m", "pytest", "-p", "no:cacheprovider", "-q", "--te-selector", str(checkout))

    before = run(fresh_python, *pytest_args, cwd=project)
    assert before.returncode == 1, before.stdout + before.stderr
    failed = re.findall(r"^FAILED test_seeds.py::test_seed_cases\[(.*?)\]", before.stdout, re.M)
    assert sorted(failed) == ["000", "001-hdim224", "001-hdim256", "001-mla192_256"]
    assert "4 failed, 4 passed" in before.stdout
    # The failure names the backend TE chose and gives TE's own reason lines.
    assert "TE 2.20.2 on sm120 chose FlashAttention (FA4 4.0.0b24)" in before.stdout
    assert "TE 2.20.2 on sm120 chose FlashAttention (FA2 2.8.3)" in before.stdout
    assert "E         Disabling FusedAttention due to NVTE_FUSED_ATTN=0" in before.stdout
    assert "E         Selected backend = FlashAttention (4.0.0b24)." in before.stdout

    codemod = run(fresh_python, "-m", "codemods.apply", str(checkout), cwd=project)
    assert codemod.returncode == 0, codemod.stderr
    after = run(fresh_python, *pytest_args, cwd=project)
    assert after.returncode == 0 and "8 passed" in after.stdout, after.stdout + after.stderr


SNAPSHOT_TEST = """
def test_selection(te_selection_snapshot):
    te_selection_snapshot.assert_match()
"""
#: TE 2.10.0's one dropout filter: deleting it is the deliberate change.
DROPOUT_FILTER = (
    "    if attention_dropout != 0.0 and use_flash_attention_3:\n"
    '        logger.debug("Disabling FlashAttention 3 for dropout")\n'
    "        use_flash_attention_3 = False\n"
)


def test_a_snapshot_test_fails_on_a_changed_selector_until_updated(fresh_python, release, tmp_path):
    source = release("2.10.0")
    checkout = tmp_path / "TransformerEngine"
    shutil.copytree(source.root, checkout)
    selector = checkout / source.path.relative_to(source.root)
    project = tmp_path / "project"
    project.mkdir()
    (project / "test_selection.py").write_text(SNAPSHOT_TEST)
    pytest_args = ("-m", "pytest", "-p", "no:cacheprovider", "-q", "--te-selector", str(checkout))

    recorded = run(fresh_python, *pytest_args, "--te-snapshot-update", cwd=project)
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    assert (project / "__snapshots__" / "test_selection" / "test_selection.json").is_file()

    # Compared with what was recorded, the selector without its filter differs in that
    # filter's requests and nowhere else (so the record held the unchanged selector's picks).
    text = selector.read_text()
    assert DROPOUT_FILTER in text
    selector.write_text(text.replace(DROPOUT_FILTER, ""))
    changed = run(fresh_python, *pytest_args, cwd=project)
    assert changed.returncode == 1, changed.stdout + changed.stderr
    assert "the selector's picks differ from" in changed.stdout
    assert "sm90, attention_dropout > 0.0: FlashAttention 2 → FlashAttention 3" in changed.stdout
    assert " differ, in 1 regions" in changed.stdout, changed.stdout

    updated = run(fresh_python, *pytest_args, "--te-snapshot-update", cwd=project)
    assert updated.returncode == 0, updated.stdout + updated.stderr
    again = run(fresh_python, *pytest_args, cwd=project)
    assert again.returncode == 0 and "1 passed" in again.stdout, again.stdout + again.stderr


def test_a_session_that_does_not_use_the_plugin_imports_no_torch(fresh_python, tmp_path):
    helped = run(fresh_python, "-X", "importtime", "-m", "pytest", "--help", cwd=tmp_path)
    assert helped.returncode == 0, helped.stderr
    assert "--te-selector=SOURCE" in helped.stdout  # the plugin is loaded
    imported = {line.rpartition("|")[2].strip() for line in helped.stderr.splitlines()}
    assert "pytest" in imported and "torch" not in imported
    assert not any(name.startswith(("torch.", "transformer_engine")) for name in imported)
    listed = run(fresh_python, "-m", "pytest", "--fixtures", cwd=tmp_path)
    assert "fixtures defined from selector_patch.pytest_plugin" in listed.stdout
    assert "load_te_selector [session scope]" in listed.stdout
    assert "te_selector [session scope]" in listed.stdout
    assert "te_selection_snapshot" in listed.stdout
