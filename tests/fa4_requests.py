"""Requests of FlashAttention 4 and what a patched selector must answer, for the per-release
tables of `test_fa4_sm12x.py` and `test_fa4_sm8x.py`.

Both run TE's real selector of every release with an FA4 path twice, after the codemod and
with the runtime patch, and compare each answer with the unpatched selector's. The environment
is seed 000's: FA3 and fused attention off, FA2 off (`NVTE_FLASH_ATTN_V2=0` from 2.18 on;
before, no such switch exists, so FA2 is simply not installed), unfused attention left on.
"""

from __future__ import annotations

from typing import Callable

from guarded_selectors import patched as with_guards
from packaging.version import Version

from selector_patch import runtime
from selector_patch.harness import load_selector
from selector_patch.registry import HAZARDS
from selector_patch.scenario import Scenario

FA4_RELEASES = ("4.0.0b24", "4.0.0b36")
UNFUSED = ("UnfusedDotProductAttention", (False, False, True))
NO_BACKEND = ("NoBackend", (False, False, False))
FA4 = "FA4"
#: "as unpatched": the patched selector must pick exactly what the unpatched one picks.
UNCHANGED = "unchanged"
#: Any backend but FA4 (TE's own fallback, whichever it is).
NOT_FA4 = "not FA4"
#: Per release and FA4 release: request name -> (request, what the patched selector answers).
Cases = Callable[[str, str], dict[str, tuple[Scenario, object]]]


def environment(te_version: str, unfused: bool = True) -> dict[str, str]:
    env = {
        "NVTE_FLASH_ATTN_V3": "0",
        "NVTE_FUSED_ATTN": "0",
        "NVTE_UNFUSED_ATTN": "1" if unfused else "0",
    }
    if Version(te_version) >= Version("2.18.0"):
        env["NVTE_FLASH_ATTN_V2"] = "0"
    return env


def fa4_only(te_version: str, fa4: str, **env: str) -> Scenario:
    """FA4 `fa4` as the only flash backend of the release, fused attention off; `env` on top."""
    fa2 = "2.8.3" if Version(te_version) >= Version("2.18.0") else None
    return Scenario(
        flash_attn_2=fa2,
        flash_attn_4=fa4,
        env=tuple(sorted({**environment(te_version), **env}.items())),
    )


def answer(selection) -> object:
    """A selection in the words of the cases."""
    if selection.role == FA4:
        return FA4
    return (selection.backend, selection.available)


def meets(expected: object, got, unpatched) -> bool:
    if expected == UNCHANGED:
        return got == unpatched
    if expected == NOT_FA4:
        return got.role != FA4
    return answer(got) == expected


def codemod(source):
    return load_selector(source, text=with_guards(source.path.read_text()))


def installed(source):
    selector = load_selector(source)
    runtime.install(selector.module, HAZARDS)
    return selector


PATCHES: dict[str, Callable] = {"codemod": codemod, "runtime patch": installed}


def table(
    patched, unpatched, te_version: str, cases: Cases, fa4_releases=FA4_RELEASES
) -> list[tuple]:
    """(FA4 release, request, expected, what the patched selector picked, as expected?)."""
    rows = []
    for fa4 in fa4_releases:
        for name, (scenario, expected) in cases(te_version, fa4).items():
            got, before = patched.select(scenario), unpatched.select(scenario)
            rows.append((fa4, name, expected, answer(got), meets(expected, got, before)))
    return rows


def assert_table(patch: str, source, unpatched, cases: Cases, fa4_releases=FA4_RELEASES) -> None:
    """Every request of `cases` answered as expected by `source` patched by `patch`, for each
    FA4 release of `fa4_releases`."""
    rows = table(PATCHES[patch](source), unpatched, source.te_version, cases, fa4_releases)
    wrong = [row for row in rows if not row[-1]]
    assert not wrong, "\n".join(map(str, wrong))
