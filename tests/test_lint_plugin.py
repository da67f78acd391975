"""The flake8 plugin as flake8 runs it: registration, options, `# noqa`, failures, other files."""

from __future__ import annotations

import ast
import importlib.metadata
import inspect
import subprocess
import sys
import typing

import pytest

from lint_plugin import plugin
from lint_plugin.engine.interpreter import AnalysisBudgetExceeded
from lint_plugin.plugin import TeaChecker
from lint_plugin.rules import FA4_INVALID


def flake8(path, *args: str) -> list[str]:
    result = subprocess.run(
        [sys.executable, "-m", "flake8", "--select=TEA", *args, str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert not result.stderr
    return [row.split(": ", 1)[1].split()[0] for row in result.stdout.splitlines()]


def enable_line(source: str) -> int:
    return next(
        number
        for number, line in enumerate(source.splitlines(), 1)
        if line.strip().startswith("use_flash_attention_4 = use_flash_attention and int(")
    )


def test_registered_as_a_flake8_extension() -> None:
    entries = importlib.metadata.entry_points(group="flake8.extension")
    assert any(e.name == "TEA" and e.value == "lint_plugin.plugin:TeaChecker" for e in entries)


def test_reports_through_flake8(tmp_path) -> None:
    path = tmp_path / "selector.py"
    path.write_text(FA4_INVALID[0])
    assert "TEA001" in flake8(path)


def test_noqa_silences_one_code(tmp_path) -> None:
    lines = FA4_INVALID[0].splitlines()
    number = enable_line(FA4_INVALID[0])
    lines[number - 1] += "  # noqa: TEA001"
    path = tmp_path / "selector.py"
    path.write_text("\n".join(lines) + "\n")
    codes = flake8(path)
    assert "TEA001" not in codes and "TEA101" in codes


def test_function_names_are_configurable(tmp_path) -> None:
    path = tmp_path / "selector.py"
    path.write_text(FA4_INVALID[0].replace("get_attention_backend", "pick_backend"))
    assert flake8(path) == []
    assert "TEA001" in flake8(path, "--tea-functions=pick_backend,other")


def test_other_files_are_dismissed_before_the_tree_is_read(monkeypatch) -> None:
    def fail(*args):
        raise AssertionError("looked into a file without a selector")

    monkeypatch.setattr(plugin, "find_selectors", fail)
    source = inspect.getsource(typing)
    checker = TeaChecker(ast.parse(source), "typing.py", source.splitlines(keepends=True))
    assert list(checker.run()) == []


@pytest.mark.parametrize(
    ("error", "code"),
    [(RuntimeError("boom"), "TEA900"), (AnalysisBudgetExceeded("too long"), "TEA901")],
)
def test_a_failure_is_one_finding(monkeypatch, error, code) -> None:
    def fail(*args):
        raise error

    monkeypatch.setattr(plugin, "analyze_hazard", fail)
    source = FA4_INVALID[0]
    findings = list(TeaChecker(ast.parse(source), "selector.py", None).run())
    assert len(findings) == 1
    line, _, message, _ = findings[0]
    assert message.startswith(code) and str(error) in message
    assert source.splitlines()[line - 1].startswith("def get_attention_backend")
