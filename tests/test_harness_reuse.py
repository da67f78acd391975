"""What the harness keeps from one load or request to the next changes no answer.

TE's files are parsed and compiled once per text (`harness.compiled`), not per path: a file
edited between two loads is read anew. A returned `Version` prints as it was returned, though
its text is remembered: equal versions may print apart. A grid's row shares its `AttentionParams`
keywords across machines only where no request could tell.
"""

from __future__ import annotations

import shutil

import pytest
from packaging.version import Version

from selector_patch.harness import LoadError, load_selector
from selector_patch.harness.selection import _text
from selector_patch.scenario import Scenario
from selector_patch.sources import resolve

#: A module of the tree every load of TE 2.20.2's selector executes whole.
HELPER = "transformer_engine/pytorch/cpp_extensions/fused_attn.py"


def test_a_helper_module_edited_after_a_load_is_read_anew(release, tmp_path) -> None:
    root = tmp_path / "TransformerEngine"
    shutil.copytree(release("2.20.2").root, root)
    source = resolve(str(root))
    load_selector(source)
    helper = root / HELPER
    helper.write_text(helper.read_text() + "\nraise RuntimeError('edited after the first load')\n")
    with pytest.raises(LoadError, match="edited after the first load"):
        load_selector(source)


def test_equal_versions_print_as_returned() -> None:
    short, long = Version("2.0"), Version("2.0.0")
    assert short == long
    assert [_text(short), _text(long), _text(short)] == ["2.0", "2.0.0", "2.0"]


#: TE 2.20.2's `check_set_window_size` warns about this window for a causal mask and moves it.
MOVED_WINDOW = {"attn_mask_type": "causal", "window_size": (-1, -1)}


@pytest.mark.parametrize(
    "request_fields, shared",
    [
        ({}, True),
        (MOVED_WINDOW, False),  # the build logged: each request logs it again
        ({"fp8_recipe": "DelayedScaling", "fp8_dpa": True}, False),  # a recipe of its own
        ({"kv_cache": "non_paged", "qkv_layout": "bshd_bshd_bshd"}, False),  # a cache of its own
    ],
)
def test_a_grid_shares_the_params_built_only_where_no_request_could_tell(
    load_te_selector, request_fields, shared
) -> None:
    """A grid's runner builds a row's `AttentionParams` keywords once for all its machines
    (`LoadedSelector.select`'s `memo`); each machine's answer is the one built afresh gives."""
    loaded = load_te_selector("2.20.2").loaded
    memo: dict = {}
    for architecture in ((9, 0), (10, 0), (12, 0)):
        scenario = Scenario(compute_capability=architecture, **request_fields)
        assert loaded.select(scenario, memo=memo) == loaded.select(scenario)
    assert bool(memo) == shared
    if request_fields is MOVED_WINDOW:
        assert any("window_size should be" in line for line in loaded.select(scenario).log)


def test_a_build_that_reads_the_environment_is_not_shared(load_te_selector, monkeypatch) -> None:
    """A fork whose `check_set_window_size` reads an `NVTE_*` variable: each request builds its
    keywords anew, so each records that read (the grid's switch twins rely on it)."""
    loaded = load_te_selector("2.20.2").loaded
    namespace = loaded.module.__dict__
    released = namespace["check_set_window_size"]

    def check_set_window_size(attn_mask_type, window_size=None):
        namespace["os"].getenv("NVTE_SLIDING_WINDOW")
        return released(attn_mask_type, window_size)

    monkeypatch.setitem(namespace, "check_set_window_size", check_set_window_size)
    memo: dict = {}
    for architecture in ((9, 0), (12, 0)):
        scenario = Scenario(compute_capability=architecture)
        assert loaded.select(scenario, memo=memo) == loaded.select(scenario)
    assert memo == {}
