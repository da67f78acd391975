"""The runtime patch `selector_patch.install()`, on real TE 2.15.0 - 2.20.2 selectors.

A selector with `install()` applied must select what a selector carrying the guards selects
(the codemod's output), leave every control exactly as the unpatched selector has it, and touch
no other thread's view of the environment.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import types
from pathlib import Path

import pytest
from guarded_selectors import patched as with_guards
from guarded_selectors import ruled_out
from packaging.version import Version
from seed_cases import (
    SEED_000,
    SEED_000_CONTROLS,
    SEED_000_NO_UNFUSED,
    SEED_001,
    SEED_001_CONTROLS,
)

import selector_patch
from selector_patch import runtime
from selector_patch.harness import Selection, Unrepresentable, load_selector
from selector_patch.registry import HAZARDS, get_hazard
from selector_patch.scenario import Scenario
from selector_patch.sources import CORPUS_RELEASES

REPO = Path(__file__).resolve().parent.parent
WITH_FA4 = [v for v in CORPUS_RELEASES if Version(v) >= Version("2.15.0")]
#: Releases whose selector reads a per-version switch for FA2 and FA4 (NVTE_FLASH_ATTN_V2/_V4).
WITH_VERSION_SWITCHES = [v for v in WITH_FA4 if Version(v) >= Version("2.18.0")]
UNFUSED_ONLY = ("UnfusedDotProductAttention", (False, False, True))
SEED_EXPECTATIONS = {
    "seed 000": (SEED_000, UNFUSED_ONLY),
    "seed 000, NVTE_UNFUSED_ATTN=0": (SEED_000_NO_UNFUSED, ("NoBackend", (False, False, False))),
    **{
        f"seed 000 {name}": (scenario, ("FlashAttention", (True, False, True)))
        for name, scenario in SEED_000_CONTROLS.items()
    },
    **{f"seed 001 {name}": (scenario, UNFUSED_ONLY) for name, scenario in SEED_001.items()},
    **{
        f"seed 001 {name}": (scenario, ("FlashAttention", (True, False, True)))
        for name, scenario in SEED_001_CONTROLS.items()
    },
}


def grid():
    seen = []
    for hazard in HAZARDS:
        for witness in hazard.witnesses():
            for scenario in (witness, *(s for _, s in hazard.control_scenarios(witness))):
                if scenario not in seen:
                    seen.append(scenario)
    return seen


def try_select(selector, scenario) -> Selection | None:
    try:
        return selector.select(scenario)
    except Unrepresentable:
        return None


@pytest.fixture(scope="module")
def patched():
    """`patched(version)`: a fresh load of the release with `install()` applied to it."""
    from selector_patch.sources import resolve

    selectors = {}

    def get(version: str):
        if version not in selectors:
            selectors[version] = load_selector(resolve(version))
            # the codemod's guards are the registry's; TE's own fixes: tests/test_te_fixes.py
            selector_patch.install(selectors[version].module, HAZARDS)
        return selectors[version]

    yield get
    for selector in selectors.values():
        selector_patch.uninstall(selector.module)


@pytest.fixture(scope="module")
def guarded(release):
    """`guarded(version)`: the release's selector with both guards written into its source."""
    selectors = {}

    def get(version: str):
        if version not in selectors:
            source = release(version)
            selectors[version] = load_selector(source, text=with_guards(source.path.read_text()))
        return selectors[version]

    return get


@pytest.mark.parametrize("version", WITH_FA4)
@pytest.mark.parametrize("case", list(SEED_EXPECTATIONS))
def test_seed_cases_select_as_a_guarded_selector(patched, guarded, version, case):
    scenario, (backend, available) = SEED_EXPECTATIONS[case]
    selection = patched(version).select(scenario)
    assert (selection.backend, selection.available) == (backend, available)
    assert selection == guarded(version).select(scenario)


@pytest.mark.parametrize("version", WITH_FA4)
def test_controls_are_untouched(patched, load_te_selector, version):
    """Every control as unpatched; one that is another hazard's witness, without its backend."""
    for hazard in HAZARDS:
        for witness in hazard.witnesses():
            for control, scenario in hazard.control_scenarios(witness):
                got = try_select(patched(version), scenario)
                if got is not None and ruled_out(scenario):
                    assert got.role not in ruled_out(scenario), control.name
                    continue
                expected = try_select(load_te_selector(version).loaded, scenario)
                assert got == expected, control.name


@pytest.mark.parametrize("version", WITH_VERSION_SWITCHES)
def test_whole_grid_selects_as_a_guarded_selector(patched, guarded, version):
    for scenario in grid():
        assert try_select(patched(version), scenario) == try_select(guarded(version), scenario)


def test_without_a_version_switch_only_fa4_sits_out_the_rerun(patched, guarded):
    """TE 2.15 - 2.17 read no NVTE_FLASH_ATTN_V4, and their NVTE_FLASH_ATTN=0 would turn FA2 off
    too: the re-run sees FA4 as not installed instead, and falls back to FA2 as the guard does,
    while the live `FlashAttentionUtils` that TE's `FlashAttention` reads still has FA4."""
    witness = SEED_000.with_changes({"flash_attn_2": "2.8.3", "env": {"NVTE_FLASH_ATTN_V2": "1"}})
    for version in ("2.17.1", "2.18.0"):
        selector = patched(version)
        assert selector.select(witness).role == "FA2"
        assert selector.select(witness) == guarded(version).select(witness)
        assert selector.module.FlashAttentionUtils.v4_is_installed


def test_the_rerun_does_not_advise_installing_what_is_installed(patched, guarded):
    """With fused off on sm80 TE recommends installing a flash-attn it would pick but lacks; the
    re-run that sees FA4 as not installed must say what the guarded selector says: nothing."""
    witness = Scenario(
        compute_capability=(8, 0), training=True, backward=True, env={"NVTE_FUSED_ATTN": "0"}
    )
    for version in ("2.17.1", "2.18.0"):
        selector = patched(version)
        advice = [line for line in selector.select(witness).log if "Please install" in line]
        expected = guarded(version).select(witness)
        assert advice == [line for line in expected.log if "Please install" in line] == []
        assert selector.select(witness).backend == expected.backend
        assert not selector.module.FlashAttentionUtils.v4_warning_printed


def test_message_is_logged_once_per_configuration(release):
    selector = load_selector(release("2.20.2"))
    selector_patch.install(selector.module)
    message = get_hazard("TEA001").message
    try:
        counts = [
            selector.select(scenario).log.count(message)
            for scenario in (
                SEED_000,
                SEED_000,
                SEED_000.with_changes({"compute_capability": (12, 1)}),
            )
        ]
    finally:
        selector_patch.uninstall(selector.module)
    assert counts == [1, 0, 1]


def test_rerun_leaves_other_threads_environment_alone(release):
    selector = load_selector(release("2.20.2"))
    module = selector.module
    inside, checked = threading.Event(), threading.Event()
    seen = {}
    cudnn_version = module.get_cudnn_version

    def paused_cudnn_version():
        """Called by TE's selector during the re-run: hold it there while the main thread looks."""
        seen["rerun"] = module.os.environ.get("NVTE_FLASH_ATTN_V4")
        inside.set()
        checked.wait(timeout=10)
        return cudnn_version()

    module.get_cudnn_version = paused_cudnn_version
    selector_patch.install(module)
    environment = dict(os.environ)
    try:
        worker = threading.Thread(target=lambda: seen.update(selection=selector.select(SEED_000)))
        worker.start()
        assert inside.wait(timeout=10)
        seen["other thread"] = (
            module.os.environ.get("NVTE_FLASH_ATTN_V4"),
            module.os.getenv("NVTE_FLASH_ATTN_V4"),
            "NVTE_FLASH_ATTN_V4" in module.os.environ,
        )
        checked.set()
        worker.join(timeout=10)
    finally:
        selector_patch.uninstall(module)
    assert seen["rerun"] == "0"
    assert seen["other thread"] == (None, None, False)
    assert seen["selection"].backend == "UnfusedDotProductAttention"
    assert dict(os.environ) == environment


def test_install_is_idempotent_and_uninstall_restores_the_function(release):
    module = load_selector(release("2.20.2")).module
    original = module.get_attention_backend
    assert selector_patch.install(module) is module
    wrapper = module.get_attention_backend
    selector_patch.install(module)
    assert module.get_attention_backend is wrapper and wrapper.__wrapped__ is original
    selector_patch.uninstall()
    assert module.get_attention_backend is original
    selector_patch.uninstall(module)  # nothing left to undo
    assert module.get_attention_backend is original


FAKE_SELECTOR = textwrap.dedent(
    """
    import os
    from dataclasses import dataclass

    CALLS = []


    @dataclass
    class AttentionParams:
        deterministic: bool = False
        is_training: bool = True
        attention_dropout: float = 0.0
        head_dim_qk: int = 128
        head_dim_v: int = 128


    class FlashAttentionUtils:
        is_installed = False
        version = "0"
        v3_is_installed = False
        fa3_version = "0"
        v4_is_installed = True
        fa4_version = "4.0.0b24"


    def get_device_compute_capability():
        return (12, 0)


    def get_attention_backend(attention_params=None):
        CALLS.append(attention_params)
        return {"NVTE_FLASH_ATTN_V4": os.environ.get("NVTE_FLASH_ATTN_V4", "1")}
    """
)


@pytest.fixture
def fake_module():
    module = types.ModuleType("fake_te_utils")
    exec(compile(FAKE_SELECTOR, "fake_te_utils.py", "exec", dont_inherit=True), module.__dict__)
    yield module
    selector_patch.uninstall(module)


def test_untriggered_call_returns_the_original_result_untouched(fake_module):
    selector_patch.install(fake_module)
    assert fake_module.os is not os
    params = fake_module.AttentionParams(deterministic=False)
    result = fake_module.get_attention_backend(params)
    assert result == {"NVTE_FLASH_ATTN_V4": "1"} and fake_module.CALLS == [params]
    triggered = fake_module.AttentionParams(deterministic=True)
    assert fake_module.get_attention_backend(triggered) == {"NVTE_FLASH_ATTN_V4": "0"}
    assert fake_module.CALLS == [params, triggered]  # one call each: no extra selector run
    selector_patch.uninstall(fake_module)
    assert fake_module.os is os


def test_install_without_te_is_an_error(monkeypatch):
    monkeypatch.setattr(runtime, "SELECTOR_MODULES", ("no_such_te_module",))
    with pytest.raises(RuntimeError, match="no TE attention selector found in no_such_te_module"):
        selector_patch.install()


def test_importing_selector_patch_imports_neither_torch_nor_te():
    code = (
        "import sys, selector_patch; selector_patch.install; selector_patch.uninstall; "
        "tops = {m.split('.')[0] for m in sys.modules}; "
        "print(sorted(tops & {'torch', 'transformer_engine'}))"
    )
    completed = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True
    )
    assert completed.stdout.strip() == "[]"


def test_launcher_patches_te_when_the_script_imports_it(tmp_path):
    site = tmp_path / "site"
    module_path = site.joinpath(*runtime.SELECTOR_MODULES[0].split(".")).with_suffix(".py")
    module_path.parent.mkdir(parents=True)
    module_path.write_text(FAKE_SELECTOR)
    package = module_path.parent
    while package != site:
        (package / "__init__.py").touch()
        package = package.parent
    script = tmp_path / "train.py"
    script.write_text(
        textwrap.dedent(
            """
            import os, sys
            from transformer_engine.pytorch.attention.dot_product_attention import utils
            print(sys.argv[1:])
            print(utils.get_attention_backend(utils.AttentionParams(deterministic=True)))
            print(utils.get_attention_backend(utils.AttentionParams(deterministic=False)))
            print(os.environ.get("NVTE_FLASH_ATTN_V4"))
            """
        )
    )
    completed = subprocess.run(
        [sys.executable, "-m", "selector_patch", "run", str(script), "--steps", "3"],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(REPO)])},
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.splitlines() == [
        "['--steps', '3']",
        "{'NVTE_FLASH_ATTN_V4': '0'}",
        "{'NVTE_FLASH_ATTN_V4': '1'}",
        "None",
    ]
    assert get_hazard("TEA001").message in completed.stderr


def test_launcher_with_missing_script_is_one_line(tmp_path):
    missing = tmp_path / "missing.py"
    completed = subprocess.run(
        [sys.executable, "-m", "selector_patch", "run", str(missing)],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert (completed.returncode, completed.stderr) == (2, f"{missing}: no such file\n")
