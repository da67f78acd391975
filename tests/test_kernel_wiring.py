"""What TE's `backends.py` concludes from the installed kernels is TE's own conclusion.

The harness runs the release's own wiring statements on each machine (`harness.wiring`) with
the kernels' own code where TE wires it in (`harness.kernels`): FA2's supported-version range
per device, FA4's `_validate_head_dims` from its wheel, the CUTLASS DSL gate, FA3's `softcap`
probe of its real signatures. A release that assigns a `FlashAttentionUtils` attribute in a
statement the harness would not run fails `test_the_harness_runs_every_wiring_statement`.
"""

from __future__ import annotations

import pytest

from selector_patch.harness import load_selector
from selector_patch.harness.wiring import find_wiring
from selector_patch.scenario import Scenario
from selector_patch.sources import CORPUS_RELEASES

WIRED_RELEASES = [v for v in CORPUS_RELEASES if not v.startswith(("1.", "2.1."))]
FA4_SELECTOR = ["2.16.0", "2.16.1", "2.17.0", "2.17.1", "2.18.0", "2.19.0", "2.20.2"]
FA4_OFF = (("NVTE_FUSED_ATTN", "0"),)


def _utils(loaded, scenario: Scenario):
    with loaded.pinned(scenario) as module:
        return dict(vars(module.FlashAttentionUtils))


@pytest.mark.parametrize("version", WIRED_RELEASES)
def test_the_harness_runs_every_wiring_statement(version, release):
    """Every attribute the file assigns on `FlashAttentionUtils` is assigned by a statement the
    harness runs: a release that moves one into a helper function makes this fail."""
    source = release(version)
    wiring = find_wiring(source.path, source.root)
    assert wiring is not None
    assert {"version", "is_installed"} <= wiring.attributes
    assert wiring.run_attributes == wiring.attributes


def test_fa2_outside_tes_supported_range_is_not_installed(release):
    """TE 2.2 supports flash-attn up to 2.7.4.post1; from SM 10.0 TE 2.10 needs 2.7.3+."""
    te_2_2 = load_selector(release("2.2.0"))
    assert not _utils(te_2_2, Scenario(flash_attn_2="2.8.3"))["is_installed"]
    assert _utils(te_2_2, Scenario(flash_attn_2="2.7.4.post1"))["is_installed"]
    te_2_10 = load_selector(release("2.10.0"))
    assert _utils(te_2_10, Scenario(flash_attn_2="2.7.2", compute_capability=(9, 0)))[
        "is_installed"
    ]
    assert not _utils(te_2_10, Scenario(flash_attn_2="2.7.2", compute_capability=(10, 0)))[
        "is_installed"
    ]


@pytest.mark.parametrize("version", FA4_SELECTOR)
def test_fa4s_own_validator_decides_its_head_dims(version, release):
    """sm100, head dim 160, fused off: FA4 refuses it (`_validate_head_dims`), so not FA4."""
    loaded = load_selector(release(version))
    refused = loaded.select(
        Scenario(compute_capability=(10, 0), head_dim_qk=160, head_dim_v=160, env=FA4_OFF)
    )
    assert refused.role != "FA4"
    assert any(
        "Disabling FlashAttention 4 due to unsupported head dimensions" in line
        for line in refused.log
    )
    accepted = loaded.select(Scenario(compute_capability=(10, 0), env=FA4_OFF))
    assert accepted.role == "FA4"


def test_fa4_4_0_0b24_needs_its_cutlass_dsl(release):
    """TE 2.19+ refuse FA4 4.0.0b24 beside nvidia-cutlass-dsl < 4.6.2, saying why."""
    loaded = load_selector(release("2.20.2"))
    assert _utils(loaded, Scenario(cutlass_dsl="4.6.2"))["v4_is_installed"]
    old = Scenario(cutlass_dsl="4.6.1")
    assert not _utils(loaded, old)["v4_is_installed"]
    assert loaded.select(old.with_changes({"compute_capability": (10, 0)})).role != "FA4"


def test_fa3s_softcap_probe_reads_its_real_signatures(release):
    """FA3 from flash-attention 2.7.2.post1 has no `softcap` parameter; from 2.8.3 it has."""
    loaded = load_selector(release("2.20.2"))
    fa3 = {"flash_attn_3": "3.0.0b1"}
    assert _utils(loaded, Scenario(**fa3, flash_attn_3_source="2.8.3"))["fa3_supports_softcap"]
    assert not _utils(loaded, Scenario(**fa3, flash_attn_3_source="2.7.2.post1"))[
        "fa3_supports_softcap"
    ]
