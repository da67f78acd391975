"""The harness runs TE code without leaking into the process; calls do not leak into each other."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap
import threading

import pytest
from guarded_selectors import patched as with_guards
from seed_cases import SEED_000, SEED_001

from selector_patch.harness import (
    LoadError,
    OpaqueDecision,
    SelectionError,
    Unrepresentable,
    load_selector,
)
from selector_patch.harness.eager import EagerCompiler, eager
from selector_patch.registry import HAZARDS, get_hazard
from selector_patch.scenario import Scenario
from selector_patch.sources import CORPUS_RELEASES

SAMPLE = ("1.9.0.post1", "2.1.0", "2.2.0", "2.20.2")


def grid() -> list[Scenario]:
    scenarios = []
    for hazard in HAZARDS:
        for witness in hazard.witnesses():
            scenarios += [witness, *(scenario for _, scenario in hazard.control_scenarios(witness))]
    return scenarios


def selections(selector, scenarios):
    results = []
    for scenario in scenarios:
        try:
            results.append(selector.select(scenario))
        except Unrepresentable:
            results.append(None)
    return results


def foreign_modules() -> set[str]:
    return {
        name
        for name in sys.modules
        if name.startswith(("transformer_engine", "flash_attn", "flashattn", "_te_attn_guards"))
    }


def test_nothing_is_left_in_sys_modules(release):
    before = foreign_modules()
    selector = load_selector(release("1.13.0"))
    selector.select(SEED_001["head dim 256"])
    assert foreign_modules() == before == set()


def test_no_release_pulls_in_the_compiler(release):
    """TE's module bodies apply `torch.compile` / `torch.compiler.assume_constant_result`; the
    harness runs eagerly, so loading and running every release imports neither `torch._dynamo`
    nor `torch._inductor` (a fresh process: other tests may have imported them here)."""
    for version in CORPUS_RELEASES:
        release(version)  # fetched into the cache the child reads
    script = textwrap.dedent(
        """
        import sys
        import torch
        from selector_patch.harness import load_selector
        from selector_patch.scenario import Scenario
        compiler = ("torch._dynamo", "torch._inductor")
        assert not any(name in sys.modules for name in compiler), "imported by torch itself"
        for version in sys.argv[1:]:
            load_selector(version).select(Scenario())
        print(sorted(name for name in sys.modules if name.startswith(compiler)))
        """
    )
    child = subprocess.run(
        [sys.executable, "-c", script, *CORPUS_RELEASES], capture_output=True, text=True
    )
    assert child.returncode == 0, child.stderr
    assert child.stdout.strip() == "[]"


@pytest.mark.parametrize("spelling", ["bare", "called", "with options", "compiler"])
def test_compiler_decorators_give_the_function_back(spelling):
    def helper():
        return None

    decorate = {
        "bare": lambda f: eager(f),
        "called": lambda f: eager()(f),
        "with options": lambda f: eager(f, mode="max-autotune", fullgraph=True),
        "compiler": lambda f: EagerCompiler().assume_constant_result(f),
    }[spelling]
    assert decorate(helper) is helper


def test_process_logging_is_untouched(load_te_selector):
    root_handlers = list(logging.getLogger().handlers)
    for version in SAMPLE:
        load_te_selector(version).loaded.select(SEED_001["head dim 256"])
    te_logger = logging.getLogger("DotProductAttention")
    assert (te_logger.handlers, te_logger.level) == ([], logging.NOTSET)
    assert logging.getLogger().handlers == root_handlers


def test_process_environment_neither_read_nor_written(load_te_selector, monkeypatch):
    monkeypatch.setenv("NVTE_FLASH_ATTN", "0")
    environment = dict(os.environ)
    assert load_te_selector("2.20.2").loaded.select(SEED_000).role == "FA4"
    assert dict(os.environ) == environment


@pytest.mark.parametrize("version", SAMPLE)
def test_calls_are_independent_of_order(load_te_selector, version):
    selector = load_te_selector(version).loaded
    scenarios = grid()
    forward = selections(selector, scenarios)
    backward = selections(selector, scenarios[::-1])[::-1]
    assert forward == backward
    assert [s.log if s else None for s in forward] == [s.log if s else None for s in backward]


def test_module_state_written_by_the_selector_is_restored(load_te_selector):
    """TE 2.1 lowers the module global `_flash_attn_max_version` for causal cross-attention
    when flash-attn is not usable; the next call must see the import-time value."""
    selector = load_te_selector("2.1.0").loaded
    imported = selector.module._flash_attn_max_version
    cross = Scenario(flash_attn_2=None, max_seqlen_kv=256)
    selector.select(cross)
    assert selector.module._flash_attn_max_version == imported


def test_releases_coexist_in_one_process(load_te_selector):
    first = [
        load_te_selector(version).loaded.select(SEED_001["head dim 256"]) for version in SAMPLE
    ]
    second = [
        load_te_selector(version).loaded.select(SEED_001["head dim 256"])
        for version in reversed(SAMPLE)
    ]
    assert first == second[::-1]
    # 1.9: head dim 256 is not allowed on sm120; 2.1, 2.2: flash-attn 2.8.3 is above their
    # maximum, 2.7.4.post1 (TE 2.2 decides it in its backends, which the harness runs).
    assert [s.role for s in first] == ["UNFUSED", "UNFUSED", "UNFUSED", "FA2"]


def test_threads_share_a_loaded_selector(load_te_selector):
    selector = load_te_selector("2.20.2").loaded
    scenarios = grid()
    expected = selections(selector, scenarios)
    results: dict[int, list] = {}

    def run(index: int) -> None:
        results[index] = selections(selector, scenarios)

    threads = [threading.Thread(target=run, args=(index,)) for index in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(result == expected for result in results.values())


def test_release_without_head_dim_qk_refuses_mla(load_te_selector):
    selector = load_te_selector("1.9.0.post1").loaded
    assert "head_dim" in selector.params_fields and "head_dim_qk" not in selector.params_fields
    with pytest.raises(Unrepresentable, match="single `head_dim`"):
        selector.select(SEED_001["MLA 192/256"])


def test_import_time_package_checks_run_per_machine(load_te_selector):
    """TE 1.9 requires flash-attn at import; a machine without it cannot import TE at all."""
    selector = load_te_selector("1.9.0.post1").loaded
    with pytest.raises(LoadError, match="flash-attn 2: none.*PackageNotFoundError.*flash-attn$"):
        selector.select(Scenario(flash_attn_2=None))


def test_text_replaces_the_file_but_keeps_its_place(release):
    source = release("2.20.2")
    text = with_guards(source.path.read_text(), [get_hazard("TEA001")])
    patched = load_selector(source, text=text)
    module = patched.module
    assert module.__package__ == "transformer_engine.pytorch.attention.dot_product_attention"
    assert module.FusedAttnBackend.__name__ == "FusedAttnBackend"  # the tree's own IntEnum
    selection = patched.select(SEED_000)
    assert (selection.role, selection.available) == ("UNFUSED", (False, False, True))
    assert get_hazard("TEA001").message in selection.log


def test_bare_file_outside_a_tree(tmp_path):
    path = tmp_path / "fork.py"
    path.write_text(
        "import logging\n"
        "from dataclasses import dataclass\n"
        "from transformer_engine.pytorch.utils import get_device_compute_capability\n"
        "@dataclass\n"
        "class AttentionParams:\n"
        "    is_training: bool = True\n"
        "def get_attention_backend(attention_params=None):\n"
        "    sm120 = get_device_compute_capability() == (12, 0)\n"
        "    logging.getLogger('DotProductAttention').warning('on sm120: %s', sm120)\n"
        "    return False, False, None, True, [False, False, True]\n"
    )
    selector = load_selector(path)
    selection = selector.select(Scenario(compute_capability=(12, 0)))
    assert (selection.backend, selection.log) == ("UnfusedDotProductAttention", ("on sm120: True",))


def test_branching_on_an_unanswered_te_value_is_an_error(tmp_path):
    path = tmp_path / "fork.py"
    path.write_text(
        "from dataclasses import dataclass\n"
        "from transformer_engine.pytorch.utils import is_fp8_available\n"
        "@dataclass\n"
        "class AttentionParams:\n"
        "    is_training: bool = True\n"
        "def get_attention_backend(attention_params=None):\n"
        "    if is_fp8_available():\n"
        "        return False, False, None, False, [False, False, False]\n"
        "    return False, False, None, True, [False, False, True]\n"
    )
    with pytest.raises(
        SelectionError, match=r"is_fp8_available\(\), which has no answer"
    ) as raised:
        load_selector(path).select(Scenario())
    assert str(raised.value).startswith(f"{path}:7: get_attention_backend raised OpaqueDecision")
    assert isinstance(raised.value.__cause__, OpaqueDecision)


def test_a_loop_over_an_unanswered_te_value_is_an_error(tmp_path):
    """Python would iterate a stand-in through `__getitem__` without end (TE 2.20's loop over
    `cp_per_step_configs(...)` in a selector file alone grew past 24 GB)."""
    path = tmp_path / "upstream.py"
    path.write_text(
        "from dataclasses import dataclass\n"
        "from transformer_engine.pytorch.attention.context_parallel import cp_per_step_configs\n"
        "@dataclass\n"
        "class AttentionParams:\n"
        "    is_training: bool = True\n"
        "def get_attention_backend(attention_params=None):\n"
        "    for config in cp_per_step_configs(2):\n"
        "        pass\n"
        "    return False, False, None, True, [False, False, True]\n"
    )
    with pytest.raises(
        SelectionError, match=r"iterated over .*cp_per_step_configs\(\), which has no answer"
    ):
        load_selector(path).select(Scenario())
