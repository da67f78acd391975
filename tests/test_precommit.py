"""pre-commit, for real: the README's snippet in a throwaway fork holding TE 2.20.2's selector.

The hooks are installed by pre-commit itself from this repository at its committed HEAD (into
the project cache, reused between runs). Unpatched, both hooks fail; after `codemods.apply`,
both pass.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from selector_patch.sources import cache_dir

REPO = Path(__file__).resolve().parent.parent
SNIPPET = re.compile(r"```yaml\n(# \.pre-commit-config\.yaml\n.*?)```", re.S)

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="pre-commit needs git")


def readme_snippet() -> str:
    (snippet,) = SNIPPET.findall((REPO / "README.md").read_text())
    return snippet


def git(directory: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=directory, check=True, capture_output=True, text=True
    ).stdout.strip()


def pre_commit(fork: Path) -> subprocess.CompletedProcess:
    environment = {**os.environ, "PRE_COMMIT_HOME": str(cache_dir() / "pre-commit")}
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", "run", "--all-files", "--color=never"],
        cwd=fork,
        env=environment,
        capture_output=True,
        text=True,
    )


def test_readme_snippet_names_both_hooks() -> None:
    snippet = readme_snippet()
    assert "id: te-attn-guards\n" in snippet and "id: te-attn-guards-lint\n" in snippet


def test_pre_commit_fails_unpatched_and_passes_patched(tmp_path: Path, release) -> None:
    source = release("2.20.2")
    fork = tmp_path / "fork"
    selector = fork / source.path.relative_to(source.root)
    selector.parent.mkdir(parents=True)
    shutil.copyfile(source.path, selector)
    config = re.sub(r"(?m)^(\s*- repo:).*$", rf"\1 {REPO}", readme_snippet())
    config = re.sub(r"(?m)^(\s*rev:).*$", rf"\1 {git(REPO, 'rev-parse', 'HEAD')}", config)
    (fork / ".pre-commit-config.yaml").write_text(config)
    git(fork, "init", "-q")
    git(fork, "add", ".")

    unpatched = pre_commit(fork)
    assert unpatched.returncode == 1, unpatched.stdout + unpatched.stderr
    output = unpatched.stdout
    assert "TEA001 missing, TEA002 missing" in output
    assert "TEA001" in output and "TEA002" in output and "Failed" in output

    applied = subprocess.run(
        [sys.executable, "-m", "codemods.apply", str(fork)], cwd=REPO, capture_output=True
    )
    assert applied.returncode == 0, applied.stderr
    git(fork, "add", ".")
    patched = pre_commit(fork)
    assert patched.returncode == 0, patched.stdout + patched.stderr
    assert "Failed" not in patched.stdout
