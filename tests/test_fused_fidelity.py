"""The harness decides as TE decides: cuDNN's fused answer is TE's own C++, the same as run directly.

For every release whose C++ is in `../shared/te-cxx`, the grid of `fidelity_grid` (768 ordinary
requests: architecture x cuDNN x mode in full, the rest pairwise) runs through `select()`. Every
fused-attention query the selector makes is recorded as the selector made it, and answered again
by the oracle (`te_cxx_oracle`), TE's query compiled into a program of its own that converts the
arguments by name and calls TE's entry point directly. The harness's answer must be the
oracle's, every line TE printed must be in the selection's log, and a selection run with the
oracle's answer as an explicit `fused_backend` must choose exactly what the C++ answer chose.
"""

from __future__ import annotations

import enum

import pytest

import te_cxx_oracle
from conftest import TE_CXX
from fidelity_grid import requests
from selector_patch.harness import Unrepresentable, load_selector
from selector_patch.harness.device import Machine
from selector_patch.harness.extension import EnumMember
from selector_patch.sources import CORPUS_RELEASES
from selector_patch.testing.inputs import SCENARIO_FIELDS, request_of
from selector_patch.te_cxx.query import load

CXX_RELEASES = [v for v in CORPUS_RELEASES if (TE_CXX / v).is_dir()] or ["2.18.0"]
ROWS_PER_FRAME = 8


def _token(value: object) -> str:
    if isinstance(value, (EnumMember, enum.Enum)):
        return value.name
    if isinstance(value, bool):
        return "1" if value else "0"
    return repr(value) if isinstance(value, float) else str(value)


class Recorder:
    """Wraps the loaded module's `tex.get_fused_attn_backend`: each call's arguments, answer."""

    def __init__(self, tex) -> None:
        self.original = tex.get_fused_attn_backend
        self.calls: list[tuple[tuple[str, ...], EnumMember]] = []
        tex.get_fused_attn_backend = self

    def __call__(self, *args):
        answer = self.original(*args)
        self.calls.append((tuple(map(_token, args)), answer))
        return answer


@pytest.mark.parametrize("version", CXX_RELEASES)
def test_select_agrees_with_te_cxx_run_directly(version, te_cxx, release):
    loaded = load_selector(release(version))
    recorder = Recorder(loaded.module.__dict__["tex"])
    query = load(te_cxx / version)
    members = {name: tuple(values) for name, values in query.enums.items()}
    oracle = te_cxx_oracle.oracle(te_cxx / version, members)

    asked, selected = [], []
    for keywords in requests(ROWS_PER_FRAME):
        if any(k not in SCENARIO_FIELDS and k not in loaded.params_fields for k in keywords):
            continue  # a field this release's AttentionParams lacks
        scenario, params = request_of(keywords, loaded.params_fields)
        before = len(recorder.calls)
        try:
            selection = loaded.select(scenario, params)
        except Unrepresentable:
            continue
        machine = Machine.of(scenario)
        for arguments, answer in recorder.calls[before:]:
            call = te_cxx_oracle.Call(machine.sm_arch, machine.cudnn_runtime_version, (), arguments)
            asked.append((call, answer, selection))
        selected.append((scenario, params, selection, recorder.calls[before:]))

    answers = te_cxx_oracle.ask(oracle, [call for call, _, _ in asked])
    disagreements = []
    for (call, answer, selection), direct in zip(asked, answers, strict=True):
        value, _, printed = direct.partition(" ")
        lines = [line for line in printed.split("|") if line]
        if value != str(answer.value) or not set(lines) <= set(selection.log):
            disagreements.append((call, answer, direct))
    assert not disagreements, disagreements[:3]

    overridden = 0
    for scenario, params, selection, calls in selected:
        if len(calls) != 1:
            continue
        answer = calls[0][1]
        forced = loaded.select(
            scenario.with_changes({"fused_backend": answer.name.removeprefix("NVTE_")}), params
        )
        assert (forced.backend, forced.role, forced.available) == (
            selection.backend,
            selection.role,
            selection.available,
        ), (scenario, params)
        overridden += 1
    refused = sum(answer.name == "NVTE_No_Backend" for _, answer, _ in asked)
    print(
        f"TE {version}: {len(selected)} requests, {len(asked)} fused queries"
        f" ({refused} refused), {overridden} re-run with the answer as an override; 0 differ"
    )
    assert len(asked) > len(selected) / 4  # the grid reaches the query, not only early filters


def test_cudnn_runtime_version_is_cudnn_get_versions_number():
    """cuDNN 9 moved the major digit: 9.18.1 is 91801, 8.9.7 is 8907 (cudnn.h's CUDNN_VERSION)."""
    assert Machine((9, 0), (9, 18, 1), ()).cudnn_runtime_version == 91801
    assert Machine((9, 0), (8, 9, 7), ()).cudnn_runtime_version == 8907
    assert Machine((12, 1), (9, 10, 0), ()).sm_arch == 121
