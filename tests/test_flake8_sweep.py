"""flake8 with the TEA plugin over every cached TE release and over the standard library.

The plugin runs on every file of every commit in TE's CI and pre-commit hooks, nearly all of
them not selectors: it must never crash flake8 (a traceback on stderr, a non-lint exit status)
and never report its own failure (TEA9xx), and its findings belong in selector files only.

Real flake8 runs as a subprocess with two jobs: its command line, option parsing, file
discovery, per-file processing and reporting, with the TEA plugin loaded from its entry point.
Only the other checkers are left out (`ONLY_TEA`). flake8 runs its built-in pycodestyle, pyflakes
and mccabe checks on every file whatever `--select` says; they took nearly all of the time (about
25 ms a file here, over 4,000 files) and test nothing of ours (`test_analysis_corpus` runs them
beside TEA on 2.20.2's selector). With them gone, flake8's token loop (`process_tokens`) runs no
check at all: it exists for the logical- and physical-line checkers, and TEA is a tree checker.
It still took three quarters of the time (45 of 59 s of CPU over the standard library), so it is
left out too; a file that does not tokenize does not parse either, and flake8's parse, which
feeds TEA, still reports it. The release sweep hands flake8 each distinct file once: the 29
releases share most of their bytes, and a file's findings depend on nothing else. The newest
release's paths come first, so its whole wheel is linted as it lies.
"""

from __future__ import annotations

import collections
import hashlib
import subprocess
import sys
import sysconfig
from pathlib import Path

from selector_patch.sources import CORPUS_RELEASES

STDLIB = Path(sysconfig.get_paths()["stdlib"])
#: flake8's own entry point, run with the `flake8.extension` plugins narrowed to TEA: the
#: plugin finder is the one place flake8 learns its checkers from. Its token loop, which only
#: line checkers need, is skipped.
ONLY_TEA = """
import sys
from flake8.checker import FileChecker
from flake8.main import cli
from flake8.plugins import finder

found = finder._find_importlib_plugins


def only_tea():
    for plugin in found():
        if plugin.entry_point.group != "flake8.extension" or plugin.entry_point.name == "TEA":
            yield plugin


finder._find_importlib_plugins = only_tea
FileChecker.process_tokens = lambda self: None
sys.exit(cli.main(sys.argv[1:]))
"""


def flake8(*paths: Path) -> list[tuple[Path, str]]:
    """(path, code) per finding; asserts that flake8 itself ran cleanly."""
    result = subprocess.run(
        [
            sys.executable, "-c", ONLY_TEA, "--select=TEA", "--jobs=2",
            "--extend-exclude=site-packages,dist-packages", *map(str, paths),
        ],
        capture_output=True,
        text=True,
        check=False,
    )  # fmt: skip
    assert result.returncode in (0, 1) and not result.stderr, result.stderr[-3000:]
    found = []
    for row in result.stdout.splitlines():
        path, _line, _col, message = row.split(":", 3)
        found.append((Path(path), message.split()[0]))
    return found


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _report(request, what: str, found: list[tuple[Path, str]]) -> None:
    codes = collections.Counter(code for _, code in found)
    counted = ", ".join(f"{code}: {n}" for code, n in sorted(codes.items())) or "no findings"
    plugins = request.config.pluginmanager
    with plugins.get_plugin("capturemanager").global_and_fixture_disabled():
        plugins.get_plugin("terminalreporter").write_line(f"\nflake8 over {what}: {counted}")


def test_flake8_over_every_release_file(release, request) -> None:
    files: dict[str, Path] = {}  # content digest -> the first path with that content
    selectors = set()
    for version in reversed(CORPUS_RELEASES):
        source = release(version)
        for path in sorted((source.root / "transformer_engine").rglob("*.py")):
            files.setdefault(_digest(path), path)
        selectors.add(_digest(source.path))
    found = flake8(*files.values())
    assert not [finding for finding in found if finding[1].startswith("TEA9")]
    # Every release's selector lacks a filter (TEA1xx); nothing else is flagged.
    assert {path for path, _ in found} == {files[digest] for digest in selectors}
    _report(request, f"{len(files)} distinct files of {len(CORPUS_RELEASES)} TE releases", found)


def test_flake8_over_the_standard_library() -> None:
    assert flake8(STDLIB) == []
