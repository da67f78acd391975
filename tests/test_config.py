"""`[tool.te-attn-guards]`: one table, read the same way by the linter, codemod and runtime patch."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from selector_patch import runtime
from selector_patch.config import ConfigError, config_from_table, load_config
from selector_patch.harness import load_selector
from selector_patch.registry import HAZARDS, Hazard
from selector_patch.scenario import Scenario

REPO = Path(__file__).resolve().parent.parent

#: FA4's deterministic backward at head dim 256 on SM 10.x (TE #3540's case), declared by a user.
USER_HAZARD = """
[tool.te-attn-guards]
skip = []

[[tool.te-attn-guards.hazards]]
id = "TEA010"
backend = "FA4"
title = "FlashAttention 4 chosen for deterministic backward at head dim 256 on SM 10.x"
architectures = [[10, 0], [11, 0]]
triggers = [
    { input = "deterministic", op = "==", value = true },
    { input = "backward", op = "==", value = true },
    { input = "padded_head_dim", op = ">", value = 192 },
]
message = "Disabling FlashAttention 4 for deterministic backward with head_dim > 192 on sm100."
section = "determinism"
kernel_version = "4.0.0b24"
witness_shapes = [{ head_dim_qk = 256, head_dim_v = 256 }]
controls = [
    { name = "nondeterministic", changes = { deterministic = false } },
    { name = "head dim 128", changes = { head_dim_qk = 128, head_dim_v = 128 } },
]

[tool.te-attn-guards.hazards.evidence]
package = "flash-attn-4"
file = "flash_attn/cute/interface.py"
text = "deterministic backward at head dim 256 unsupported on SM100"
affected = ">=4.0.0b24"
"""


def test_defaults_without_a_table(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    config = load_config(tmp_path / "a.py")
    assert config.hazards == HAZARDS
    assert config.selector_functions == ("get_attention_backend",)


@pytest.mark.parametrize(
    "table, key",
    [
        ({"bogus": 1}, "bogus: unknown key"),
        ({"skip": "TEA001"}, "skip: expected an array"),
        ({"skip": ["TEA999"]}, "skip[0]: unknown hazard 'TEA999'"),
        ({"selector-functions": [1]}, "selector-functions[0]: expected str"),
        ({"hazards": [{"id": "X1"}]}, "hazards[0].id: 'X1' must look like TEA0NN"),
        ({"hazards": [HAZARDS[0].to_mapping()]}, "hazards: id TEA001 is declared twice"),
        (
            {"hazards": [{**HAZARDS[0].to_mapping(), "id": "TEA010", "section": "softmax"}]},
            "hazards[0].section: 'softmax' is not one of",
        ),
        (
            {"hazards": [{**HAZARDS[0].to_mapping(), "id": "TEA010", "colour": "red"}]},
            "hazards[0].colour: unknown key",
        ),
    ],
)
def test_errors_name_the_key(table: dict, key: str) -> None:
    with pytest.raises(ValueError, match=key.replace("[", r"\[").replace("(", r"\(")):
        config_from_table(table)


def test_error_names_the_file(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.te-attn-guards]\nskip = ['TEA999']\n")
    with pytest.raises(ConfigError) as error:
        load_config(tmp_path)
    assert str(error.value).startswith(f"{tmp_path / 'pyproject.toml'}: [tool.te-attn-guards].")


def test_hazards_round_trip_through_their_mapping() -> None:
    for hazard in HAZARDS:
        assert Hazard.from_mapping(hazard.to_mapping()) == hazard


def test_skip_and_selector_functions() -> None:
    config = config_from_table({"skip": ["TEA002"], "selector-functions": ["pick_backend"]})
    assert [h.id for h in config.hazards] == [
        "TEA001",
        "TEA003",
        "TEA004",
        "TEA005",
        "TEA006",
        "TEA007",
    ]
    assert config.selector_functions == ("pick_backend",)


def test_a_declared_hazard_is_flagged_inserted_and_enforced(tmp_path: Path, release, monkeypatch):
    """One hazard, declared only in the project's pyproject.toml, reaches all three tools."""
    source = release("2.20.2")
    project = tmp_path / "fork"
    selector = project / source.path.relative_to(source.root)
    selector.parent.mkdir(parents=True)
    shutil.copyfile(source.path, selector)
    (project / "pyproject.toml").write_text(USER_HAZARD)

    lint = [sys.executable, "-m", "flake8", "--select=TEA010", str(selector)]
    flagged = subprocess.run(lint, cwd=REPO, capture_output=True, text=True)
    assert "TEA010" in flagged.stdout, flagged.stdout + flagged.stderr

    apply = [sys.executable, "-m", "codemods.apply", str(project), "--json"]
    applied = subprocess.run(apply, cwd=REPO, capture_output=True, text=True)
    assert applied.returncode == 0, applied.stderr
    statuses = {h["id"]: h["status"] for h in json.loads(applied.stdout)[0]["hazards"]}
    assert statuses == {f"TEA00{n}": "inserted" for n in (1, 2, 3, 4)} | {
        "TEA005": "already-guarded",  # 2.20.2 switches FA4 off below sm90 itself
        "TEA006": "inserted",
        "TEA007": "inserted",
        "TEA010": "inserted",
    }
    assert subprocess.run(lint, cwd=REPO, capture_output=True, text=True).stdout == ""

    witness = Scenario(
        compute_capability=(10, 0),
        deterministic=True,
        head_dim_qk=256,
        head_dim_v=256,
        env=(("NVTE_FLASH_ATTN_V2", "0"), ("NVTE_FUSED_ATTN", "0")),
    )
    unpatched = load_selector(source)
    assert unpatched.select(witness).role == "FA4"
    monkeypatch.chdir(project)
    runtime.install(unpatched.module)
    try:
        selection = unpatched.select(witness)
        assert selection.role == "UNFUSED"
        assert unpatched.select(witness.with_changes({"deterministic": False})).role == "FA4"
    finally:
        runtime.uninstall(unpatched.module)
