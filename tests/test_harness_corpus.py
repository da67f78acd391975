"""Every TE release 1.9.0.post1 - 2.20.2 on the virtual device: the per-release hazard table.

TEA001 exists from the first release with an FA4 path (2.15.0) and is reachable there; TEA002 is
reachable exactly where TE's FA2 "head dim > 192" allowlist admits a 99 KB shared-memory GPU
(TE 2.1 added sm120 to it). Run with `-s` to print the table.
"""

from __future__ import annotations

import pytest

from selector_patch.harness import LoadedSelector
from selector_patch.registry import HAZARDS, get_hazard
from selector_patch.scenario import Scenario
from selector_patch.sources import CORPUS_RELEASES

NA, UNREACHABLE, REACHABLE = "not applicable", "not reachable", "reachable"
#: release: (TEA001, TEA002, FA2's head dim > 192 allowlist admits a 99 KB GPU)
EXPECTED = {
    "1.9.0.post1": (NA, UNREACHABLE, False),
    "1.10.0": (NA, UNREACHABLE, False),
    "1.11.0": (NA, UNREACHABLE, False),
    "1.12.0": (NA, UNREACHABLE, False),
    "1.13.0": (NA, UNREACHABLE, False),
    "2.1.0": (NA, REACHABLE, True),
    "2.2.0": (NA, REACHABLE, True),
    "2.3.0": (NA, REACHABLE, True),
    "2.4.0": (NA, REACHABLE, True),
    "2.5.0": (NA, REACHABLE, True),
    "2.6.0": (NA, REACHABLE, True),
    "2.6.0.post1": (NA, REACHABLE, True),
    "2.7.0": (NA, REACHABLE, True),
    "2.8.0": (NA, REACHABLE, True),
    "2.9.0": (NA, REACHABLE, True),
    "2.10.0": (NA, REACHABLE, True),
    "2.11.0": (NA, REACHABLE, True),
    "2.12.0": (NA, REACHABLE, True),
    "2.13.0": (NA, REACHABLE, True),
    "2.14.0": (NA, REACHABLE, True),
    "2.14.1": (NA, REACHABLE, True),
    "2.15.0": (REACHABLE, REACHABLE, True),
    "2.16.0": (REACHABLE, REACHABLE, True),
    "2.16.1": (REACHABLE, REACHABLE, True),
    "2.17.0": (REACHABLE, REACHABLE, True),
    "2.17.1": (REACHABLE, REACHABLE, True),
    "2.18.0": (REACHABLE, REACHABLE, True),
    "2.19.0": (REACHABLE, REACHABLE, True),
    "2.20.2": (REACHABLE, REACHABLE, True),
}
#: flash-attn 2 versions tried, newest first, until the release accepts one on the probed GPU
#: (TE 1.x accepts up to 2.5.8 / 2.6.3, TE 2.1 up to 2.7.4.post1).
FA2_VERSIONS = ("2.8.3", "2.7.4.post1", "2.5.8")


def fa2_allowlist_admits(selector: LoadedSelector, arch: tuple[int, int]) -> bool | None:
    """Whether FA2 stays eligible at head dim 256 on `arch` (eval, no dropout: no hazard), on a
    machine where FA2 is the only flash-attn installed and fused attention is off. None when
    the release runs none of `FA2_VERSIONS` on `arch` even at head dim 128."""
    probe = Scenario(
        compute_capability=arch,
        flash_attn_4=None,
        training=False,
        backward=False,
        env=(("NVTE_FUSED_ATTN", "0"),),
    )
    for version in FA2_VERSIONS:
        small = probe.with_changes({"flash_attn_2": version})
        if selector.select(small).role == "FA2":
            large = small.with_changes({"head_dim_qk": 256, "head_dim_v": 256})
            return selector.select(large).role == "FA2"
    return None


def verdict(report) -> str:
    if report.reachable:
        return REACHABLE
    return UNREACHABLE if report.applicable else NA


@pytest.fixture(scope="module")
def table(load_te_selector, release_reports):
    rows = {}
    for version in CORPUS_RELEASES:
        selector = load_te_selector(version).loaded
        reports = release_reports(version)
        admitted = [
            fa2_allowlist_admits(selector, arch) for arch in get_hazard("TEA002").architectures
        ]
        assert None not in admitted, f"{version}: no flash-attn 2 probe version runs"
        rows[version] = (
            verdict(reports["TEA001"]),
            verdict(reports["TEA002"]),
            any(admitted),
            reports,
        )
    print(f"\n{'release':<12} {'TEA001':<15} {'TEA002':<15} FA2 >192 on a 99 KB GPU")
    for version, (tea001, tea002, admits, _) in rows.items():
        print(f"{version:<12} {tea001:<15} {tea002:<15} {'yes' if admits else 'no'}")
    return rows


def test_corpus_is_covered():
    assert list(EXPECTED) == list(CORPUS_RELEASES)


@pytest.mark.parametrize("version", CORPUS_RELEASES)
def test_per_release_verdicts(table, version):
    assert table[version][:3] == EXPECTED[version]


@pytest.mark.parametrize("version", CORPUS_RELEASES)
def test_tea002_follows_the_allowlist(table, version):
    _, tea002, admits, _ = table[version]
    assert (tea002 == REACHABLE) == admits


@pytest.mark.parametrize("version", CORPUS_RELEASES)
def test_no_control_fails_on_unpatched_releases(table, version):
    reports = table[version][3]
    assert [report.controls.failed for report in reports.values()] == [[] for _ in HAZARDS]


@pytest.mark.parametrize("version", [v for v, row in EXPECTED.items() if row[0] == REACHABLE])
def test_tea001_witness_is_sm12x_deterministic_training(table, version):
    witness = table[version][3]["TEA001"].witness
    assert witness.compute_capability == (12, 0)
    assert witness.deterministic and witness.training and witness.backward
