"""`docs/rules/` is generated from the rule registry; a stale page fails here."""

from pathlib import Path

from lint_plugin import docs


def test_checked_in_pages_are_up_to_date(capsys) -> None:
    assert docs.main(["--check"]) == 0, capsys.readouterr().out


def test_check_reports_stale_missing_and_extra_pages(tmp_path: Path, capsys) -> None:
    assert docs.main([str(tmp_path)]) == 0
    assert docs.main([str(tmp_path), "--check"]) == 0
    (tmp_path / "TEA001.md").write_text("old\n")
    (tmp_path / "TEA102.md").unlink()
    (tmp_path / "TEA777.md").write_text("gone\n")
    assert docs.main([str(tmp_path), "--check"]) == 1
    out = capsys.readouterr().out
    assert all(name in out for name in ("TEA001.md", "TEA102.md", "TEA777.md"))
    assert docs.main([str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.glob("*.md")) == sorted(
        ["README.md", *(f"{code}.md" for code in docs.ALL_RULES)]
    )


def test_every_page_has_what_why_and_fix() -> None:
    for name, page in docs.pages().items():
        if name != "README.md":
            assert "## What it does" in page and "## Why is this bad?" in page and "## Fix" in page
