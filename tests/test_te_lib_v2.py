"""TE 2.20.2's compiled v2 query: TE's rules answer, cuDNN's own check alone is assumed.

TE asks cuDNN graph by graph (`query_support`: cuDNN frontend's own checks, then what only a GPU
answers), the forward's, then for training the backward's; the verdict is assumed per graph
(`te_lib.seam`), so the backward graph's frontend checks answer too.

The suite fetches no library of 2.20.2 (conftest's `LIBRARY_RELEASES`: two wheels at most), so
this module runs where one is already in the cache (`python -m selector_patch verify 2.20.2`
with no trees fetches it, about 280 MB) and is skipped, saying so, elsewhere. It never fetches.
"""

from __future__ import annotations

import pytest

from fidelity_grid import requests
from selector_patch import te_lib
from selector_patch.te_lib import seam, verdicts
from selector_patch.te_cxx.replies import Replies
from selector_patch.harness import Unrepresentable, load_selector
from selector_patch.harness.config_fields import VERDICT_ASSUMED
from selector_patch.registry import get_hazard
from selector_patch.scenario import Scenario
from selector_patch.sources import cache_dir
from selector_patch.te_cxx import TE_CXX_VARIABLE
from selector_patch.testing.inputs import SCENARIO_FIELDS, request_of

VERSION = "2.20.2"


@pytest.fixture
def v2(release, monkeypatch, tmp_path):
    if not (cache_dir() / "libraries" / VERSION).is_dir():
        pytest.skip(f"no compiled library of TE {VERSION} in the cache (the suite fetches none)")
    monkeypatch.delenv(TE_CXX_VARIABLE, raising=False)
    monkeypatch.setenv(te_lib.LIBRARIES_VARIABLE, VERSION)
    monkeypatch.setenv(te_lib.OFFLINE_VARIABLE, "1")
    monkeypatch.chdir(tmp_path)
    return load_selector(release(VERSION))


def _verdicts(selection) -> list[str]:
    return [line for line in selection.log if line.startswith(VERDICT_ASSUMED)]


def test_tes_own_rules_reject_with_tes_message_and_assume_nothing(v2):
    keywords = dict(compute_capability=(8, 9), attention_dropout=0.1, max_seqlen_kv=2048)
    selection = v2.select(
        *request_of({**keywords, "attn_mask_type": "causal_bottom_right"}, v2.params_fields)
    )
    assert selection.role != "FUSED" and not _verdicts(selection)
    assert v2.assumption_of(selection) is None
    assert (
        "Disabling FusedAttention: Bottom right causal mask is only supported with is_bias=False,"
        " is_alibi=False, is_dropout=False." in selection.log
    ), selection.log


def test_below_cudnn_9_12_tes_query_throws_and_the_request_is_one_te_cannot_run(v2):
    """TE 2.20 refuses a cuDNN below 9.12 when it creates its handle, as on a GPU: no request
    runs there, so `verify` counts such witnesses as not expressible instead of failing."""
    with pytest.raises(Unrepresentable, match="requires cuDNN 9.12.0 or later"):
        v2.select(Scenario(compute_capability=(9, 0), cudnn_version=(9, 10, 0)))


def test_only_requests_reaching_cudnns_check_carry_the_assumption_and_are_counted(v2):
    query = v2._query
    reached = rejected = 0
    for keywords in requests(1):
        if any(k not in SCENARIO_FIELDS and k not in v2.params_fields for k in keywords):
            continue
        scenario, params = request_of(keywords, v2.params_fields)
        before = query.asked_cudnn
        try:
            selection = v2.select(scenario, params)
        except Unrepresentable:
            continue
        except Exception as error:  # TE's own query throws below cuDNN 9.12: TE's behaviour
            assert "requires cuDNN 9.12.0 or later" in str(error), error
            continue
        asked = query.asked_cudnn - before
        assert len(_verdicts(selection)) == asked, (keywords, selection.log)
        assert (v2.assumption_of(selection) is not None) == bool(asked)
        reached += bool(asked)
        rejected += not asked
    assert reached and rejected, (reached, rejected)
    assert f"for the {query.asked_cudnn} request(s)" in v2.fused_assumption


def test_a_recorded_verdict_answers_instead_of_the_assumption(v2, release, monkeypatch, tmp_path):
    """A file of verdicts (as `te_lib.record` writes on a GPU) holding this request's fields:
    its answer is TE's, with its message, and nothing is assumed. Here the file says cuDNN
    refused, the opposite of the assumption, so the selection must change."""
    scenario = Scenario(compute_capability=(9, 0))
    assumed = v2.select(scenario)
    assert assumed.role == "FUSED" and _verdicts(assumed)
    request = v2._query.last_request
    assert request[:2] == (90, 91801)
    refused = "cuDNN refused this graph (as recorded)"
    path = tmp_path / "verdicts.json"
    verdicts.write(path, VERSION, {request: (-1, refused)})
    monkeypatch.setenv(te_lib.VERDICTS_VARIABLE, str(path))
    recorded = load_selector(release(VERSION)).select(scenario)
    assert recorded.role != "FUSED" and not _verdicts(recorded)
    assert f"Disabling FusedAttention: {refused}" in recorded.log, recorded.log


#: TEA057's request: deterministic training on sm100 with cuDNN 9.14.0.
DETERMINISTIC_SM100 = Scenario(compute_capability=(10, 0), cudnn_version=(9, 14, 0),
                               deterministic=True)  # fmt: skip


def test_the_backward_graphs_frontend_check_answers_after_the_forward_graphs_assumed_verdict(v2):
    """cuDNN frontend refuses this backward graph in its own `validate`, a CPU-side check that
    TE reaches only once the forward graph's verdict is in: TE's answer, with the frontend's
    words, and nothing assumed. With the verdict assumed for the whole query at the forward
    graph's first backend call, it would be an assumed FusedAttention."""
    query = v2._query
    before = query.asked_cudnn
    selection = v2.select(DETERMINISTIC_SM100)
    assert selection.role != "FUSED" and not _verdicts(selection), selection.log
    assert v2.assumption_of(selection) is None and query.asked_cudnn == before
    assert (
        "Disabling FusedAttention: Deterministic algorithm is not supported on blackwell"
        " architecture with cudnn version below 9.18.0" in selection.log
    ), selection.log


def test_a_forward_only_request_asks_one_graph_whose_verdict_stays_assumed(v2):
    """The same request with no backward asks cuDNN about the forward graph alone, which the
    frontend admits: its verdict is cuDNN's, assumed, and counted."""
    query = v2._query
    before = query.asked_cudnn
    selection = v2.select(DETERMINISTIC_SM100.with_changes({"training": False, "backward": False}))
    assert selection.role == "FUSED" and len(_verdicts(selection)) == 1, selection.log
    assert query.asked_cudnn == before + 1


def test_a_graph_te_keeps_from_an_assumed_verdict_still_carries_the_assumption(v2):
    """A graph whose verdict was assumed returns to TE as if supported, and TE keeps it in its
    graph cache: the same request asked again (past the helper's reply cache) is admitted from
    that cache without asking cuDNN, on the same assumed verdict, and says so."""
    query = v2._query
    for _ in range(2):
        query._replies = Replies()
        before = query.asked_cudnn
        selection = v2.select(Scenario(compute_capability=(9, 0)))
        assert selection.role == "FUSED" and _verdicts(selection), selection.log
        assert query.asked_cudnn == before + 1


def test_tea074s_witnesses_get_the_frontends_fp8_backward_refusal_on_2_20_2(v2):
    """TE #2148's sm90 FP8 backward head-dim limit lives in cuDNN frontend's backward check in
    2.20.2: every TEA074 witness is answered there, none on an assumed verdict."""
    for witness in get_hazard("TEA074").witnesses():
        selection = v2.select(witness)
        assert selection.role != "FUSED" and not _verdicts(selection), (witness, selection.log)
        assert any("hidden_dim shoud be equal to 128" in line for line in selection.log)


def test_query_support_is_found_in_2_20_2s_library_by_its_signature(v2):
    """Where the per-graph verdict sits: TE's `query_support`, local to the library, placed by
    an exported function; a library that lacks it (2.19.0 has no graph queries) has no seam."""
    library = cache_dir() / "libraries" / VERSION / "libtransformer_engine.so"
    found = seam.locate(library)
    assert found is not None and found["anchor"] == "nvte_get_fused_attn_backend_v2", found
    assert found["offset"] != found["anchor_offset"]
    older = cache_dir() / "libraries" / "2.19.0" / "libtransformer_engine.so"
    if older.is_file():
        assert seam.locate(older) is None
