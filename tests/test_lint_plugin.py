"""The flake8 plugin as flake8 runs it: registration, options, `# noqa`, failures, other files."""

from __future__ import annotations

import ast
import gc
import importlib.metadata
import inspect
import subprocess
import sys
import typing

import pytest

from lint_plugin import checks
from lint_plugin.engine import analysis, module_scan
from lint_plugin.engine.program import function_index
from lint_plugin.engine.interpreter import AnalysisBudgetExceeded
from lint_plugin.plugin import TeaChecker
from lint_plugin.rule_examples import FA4_INVALID


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

    monkeypatch.setattr(checks, "rows", fail)
    source = inspect.getsource(typing)
    checker = TeaChecker(ast.parse(source), "typing.py", source.splitlines(keepends=True))
    assert list(checker.run()) == []


@pytest.mark.parametrize(
    ("error", "code"),
    [(RuntimeError("boom"), "TEA900"), (AnalysisBudgetExceeded("too long"), "TEA901")],
)
def test_a_failure_is_one_finding(monkeypatch, error, code) -> None:
    def fail(*args, **kwargs):
        raise error

    monkeypatch.setattr(checks, "analyze_hazards", fail)
    source = FA4_INVALID[0]
    findings = list(TeaChecker(ast.parse(source), "selector.py", None).run())
    assert len(findings) == 1
    line, _, message, _ = findings[0]
    assert message.startswith(code) and str(error) in message
    assert source.splitlines()[line - 1].startswith("def get_attention_backend")


@pytest.mark.parametrize("collecting", [True, False])
@pytest.mark.parametrize("escapes", [False, True])
def test_the_collector_is_paused_for_the_analysis_alone(monkeypatch, collecting, escapes) -> None:
    """Off while the analysis runs, then as the user had it, even when an error escapes."""
    seen = []

    def analysis_rows(*args):
        seen.append(gc.isenabled())
        if escapes:
            raise KeyboardInterrupt
        return [(1, 0, "TEA001 found")]

    monkeypatch.setattr(checks, "rows", analysis_rows)
    (gc.enable if collecting else gc.disable)()
    try:
        rows = TeaChecker(ast.parse(FA4_INVALID[0]), "selector.py", None).run()
        assert gc.isenabled() is collecting  # nothing happens before the first row is asked for
        if escapes:
            with pytest.raises(KeyboardInterrupt):
                list(rows)
        else:
            assert [message for _, _, message, _ in rows] == ["TEA001 found"]
        assert seen == [False] and gc.isenabled() is collecting
    finally:
        gc.enable()


def test_a_file_done_keeps_no_prepared_selector() -> None:
    """What the analysis of a file kept (its tree included) goes when the file is done."""
    source = FA4_INVALID[0]
    list(TeaChecker(ast.parse(source), "selector.py", source.splitlines(True)).run())
    assert analysis.selector.cache_info().currsize == 0
    assert function_index.cache_info().currsize == 0
    assert not module_scan._SOURCES  # nor the text it was parsed from


def test_flake8_loads_te_fixes_only_where_they_are_guarded(tmp_path) -> None:
    """The default hazards' analysis never reads TE's own fixes (`selector_patch.registry`'s
    lazy `TE_FIXES`), nor what reads a release's tree (`sources`)."""
    code = (
        "import sys, ast; from lint_plugin.plugin import TeaChecker; "
        "source = open(sys.argv[1]).read(); "
        "rows = list(TeaChecker(ast.parse(source), sys.argv[1], source.splitlines(True)).run()); "
        "print(len(rows), sorted(m for m in sys.modules if m.startswith('selector_patch.')"
        " and m.rsplit('.', 1)[1] in ('te_fixes', 'sources')))"
    )
    selector = tmp_path / "selector.py"
    selector.write_text(FA4_INVALID[0])
    loaded = subprocess.run(
        [sys.executable, "-c", code, str(selector)], capture_output=True, text=True, check=True
    ).stdout
    assert loaded.split(" ", 1)[1].strip() == "[]" and int(loaded.split()[0]) > 0
    (tmp_path / "pyproject.toml").write_text("[tool.te-attn-guards]\nte-fixes = true\n")
    loaded = subprocess.run(
        [sys.executable, "-c", code, str(selector)], capture_output=True, text=True, check=True
    ).stdout
    assert "'selector_patch.registry.te_fixes'" in loaded


def test_flake8_on_a_file_without_a_selector_never_loads_the_analysis(tmp_path) -> None:
    """The plugin itself is the standard library alone; the engine loads for a selector."""
    code = (
        "import sys, ast; from lint_plugin.plugin import TeaChecker; "
        "source = open(sys.argv[1]).read(); "
        "list(TeaChecker(ast.parse(source), sys.argv[1], source.splitlines(True)).run()); "
        "print(sorted(m for m in sys.modules if m.startswith(('lint_plugin.', 'selector_patch.'))))"
    )
    plain = tmp_path / "plain.py"
    plain.write_text("x = 1\n")
    loaded = subprocess.run(
        [sys.executable, "-c", code, str(plain)], capture_output=True, text=True, check=True
    ).stdout
    assert loaded.strip() == "['lint_plugin.plugin', 'selector_patch.project']"
