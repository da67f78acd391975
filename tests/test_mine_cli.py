"""`python -m lint_plugin.mine` on kernel trees written here: sources, exit codes, bad input."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

from lint_plugin.mine.__main__ import EXIT_ERROR, EXIT_OK, EXIT_UNGUARDED, main
from lint_plugin.mine.cute.kernel import from_directory
from selector_patch.config import TABLE
from selector_patch.registry import HAZARDS
from selector_patch.sources import SourceError

REPO = Path(__file__).resolve().parent.parent
TE = "2.20.2"

SM12X_BACKWARD = """
def _flash_attn_bwd(q, deterministic=False):
    arch = _get_device_arch()
    if arch // 10 == 12:
        assert deterministic is False, "deterministic backward not supported on SM 12.0"
"""


#: What TE imports from flash-attn-4's interface (2.20.2's backends.py): a tree without these
#: fails TE's import, and TE reports FA4 as installed but unusable.
TE_IMPORTS = """
def flash_attn_func(*args, **kwargs): ...
def flash_attn_varlen_func(*args, **kwargs): ...
def _flash_attn_fwd(*args, **kwargs): ...
def _validate_head_dims(head_dim, head_dim_v, compute_capability, alignment): ...
"""


def kernel_tree(root: Path, interface: str, version: str | None = "4.0.0b99") -> Path:
    """A directory laid out like site-packages: `flash_attn/cute/` and its dist-info."""
    package = root / "flash_attn" / "cute"
    package.mkdir(parents=True)
    (package / "interface.py").write_text(textwrap.dedent(interface) + TE_IMPORTS)
    if version is not None:
        info = root / f"flash_attn_4-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(
            f"Metadata-Version: 2.4\nName: flash-attn-4\nVersion: {version}\n"
        )
    return root


@pytest.mark.parametrize("given", [".", "flash_attn", "flash_attn/cute"])
def test_kernel_source_is_found_from_the_tree_the_package_or_the_cute_directory(tmp_path, given):
    root = kernel_tree(tmp_path, SM12X_BACKWARD)
    kernel = from_directory(root / given)
    assert (kernel.root, kernel.version) == (root.resolve(), "4.0.0b99")
    assert [kernel.relative(path) for path in kernel.files()] == ["flash_attn/cute/interface.py"]


def test_kernel_source_without_metadata_or_package_is_refused(tmp_path):
    root = kernel_tree(tmp_path / "bare", SM12X_BACKWARD, version=None)
    with pytest.raises(SourceError, match="cannot tell the version"):
        from_directory(root)
    with pytest.raises(SourceError, match="no flash_attn/cute/ here"):
        from_directory(tmp_path)


def test_unguarded_refusal_exits_1_with_a_declaration(tmp_path, release, capsys):
    release(TE)
    root = kernel_tree(tmp_path, SM12X_BACKWARD)
    code = main(["--te", TE, "--kernel-source", str(root), "--skip-hazard", "TEA001"])
    out = capsys.readouterr().out
    assert code == EXIT_UNGUARDED
    assert out.splitlines()[1] == "1 sites, 1 cases: 1 UNGUARDED"
    (declared,) = tomllib.loads(out[out.index("[[tool.") :])["tool"][TABLE]["hazards"]
    assert declared["id"] not in {hazard.id for hazard in HAZARDS}
    assert declared["evidence"]["line"] == 5


def test_no_arch_refusal_exits_0(tmp_path, release, capsys):
    release(TE)
    root = kernel_tree(tmp_path, "def f(x):\n    assert x, 'always'\n")
    assert main(["--te", TE, "--kernel-source", str(root), "--json"]) == EXIT_OK
    assert json.loads(capsys.readouterr().out)["verdicts"] == []


@pytest.mark.parametrize(
    "args, cause",
    [
        (["--kernel-source", "{tmp}/missing"], "no flash_attn/cute/ here"),
        (["--kernel-source", "{tree}", "--skip-hazard", "TEA099"], "--skip-hazard TEA099"),
        (["--kernel-source", "{broken}"], "syntax error at line 1"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, release, args, cause):
    release(TE)
    tree = kernel_tree(tmp_path / "tree", SM12X_BACKWARD)
    broken = kernel_tree(tmp_path / "broken", "def f(:\n")
    args = [a.format(tmp=tmp_path, tree=tree, broken=broken) for a in args]
    completed = subprocess.run(
        [sys.executable, "-m", "lint_plugin.mine", "--te", TE, *args],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert completed.returncode == EXIT_ERROR
    assert completed.stdout == ""
    assert completed.stderr.count("\n") == 1 and cause in completed.stderr


def test_a_selector_the_harness_cannot_run_is_one_line_and_exit_2(tmp_path, capsys):
    """A vendor port asks `torch.musa`, which the virtual device does not model."""
    selector = REPO / "tests" / "fork_shapes" / "vendor_device.py"
    tree = kernel_tree(tmp_path, SM12X_BACKWARD)
    assert main(["--te", str(selector), "--kernel-source", str(tree)]) == EXIT_ERROR
    captured = capsys.readouterr()
    assert captured.out == ""
    (line,) = captured.err.splitlines()
    assert line.startswith(f"python -m lint_plugin.mine: {selector}:25: get_attention_backend")
    assert "has no attribute 'musa'" in line
