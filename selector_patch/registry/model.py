"""The hazard model: what a hazard states, as data, and how it is read from TOML/JSON.

A hazard names its backend by role, the architectures and trigger conditions it holds on, the
line TE should log when it filters the case, its evidence, and the *controls*, nearby inputs
where the backend must stay eligible. Witness scenarios (inputs inside the hazard) and control
scenarios are derived here, once, and shared by the harness, the analyzer, the codemod's
self-check and the runtime patch. A hazard's witnesses are its INVALID examples and its controls
its VALID ones; `tests/test_registry.py` checks both against the hazard's own trigger.

The hazards themselves live beside this module, one module per source of evidence:
`kernel_refusals` (a kernel asserts or launches nothing) and `te_fixes` (TE itself later
switched the backend off there).
"""

from __future__ import annotations

import functools
import itertools
import re
from typing import Any, Iterator, Mapping

from selector_patch.records import Record, TupleRecord
from selector_patch.roles import ROLES, Role
from selector_patch.scenario import Condition, Scenario
from selector_patch.versions import clauses, compare, order, satisfies, valid

#: Scenario field holding the installed version of each flash-attn role's package.
PACKAGE_FIELD = {"FA2": "flash_attn_2", "FA3": "flash_attn_3", "FA4": "flash_attn_4"}
#: `NVTE_*` switches that leave a role as the only flash backend, beside unfused attention.
ISOLATING_ENV = {
    "FA2": {"NVTE_FLASH_ATTN_V3": "0", "NVTE_FLASH_ATTN_V4": "0", "NVTE_FUSED_ATTN": "0"},
    "FA3": {"NVTE_FLASH_ATTN_V2": "0", "NVTE_FLASH_ATTN_V4": "0", "NVTE_FUSED_ATTN": "0"},
    "FA4": {"NVTE_FLASH_ATTN_V2": "0", "NVTE_FLASH_ATTN_V3": "0", "NVTE_FUSED_ATTN": "0"},
    "FUSED": {"NVTE_FLASH_ATTN": "0"},
}


@functools.lru_cache(maxsize=64)
def _specifier(affected: str):
    """`affected` parsed, once: `packaging.specifiers` loads only when a version is judged."""
    from packaging.specifiers import SpecifierSet

    return SpecifierSet(affected, prereleases=True)


class Spelling(Record):
    """How one range of kernel releases writes the refusal (the check moved and changed)."""

    affected: str
    text: str
    #: In the newest release of the range.
    line: int | None = None


class Evidence(Record):
    """Where the kernel library itself refuses (or silently mishandles) the case."""

    package: str
    file: str
    #: The newest affected release's check, at `line`.
    text: str
    #: Versions of `package` that carry the defect, as a PEP 440 specifier.
    affected: str
    line: int | None = None
    reference: str = ""
    #: Where releases spell the check differently: each range of `affected` and its text.
    spellings: tuple[Spelling, ...] = ()

    def affects(self, version: str) -> bool:
        from packaging.version import Version  # loaded with `packaging.specifiers` anyway

        return _specifier(self.affected).contains(Version(version))

    @property
    def fixed_in(self) -> str | None:
        """The first release that no longer refuses (an upper bound of `affected`), if any.

        A guard for a defect that a later release fixed must keep the backend for that release
        and newer ones, so it also tests the installed version (`Hazard.guard_fires`).

        Read from `affected`'s clauses as `SpecifierSet` splits them (at commas), without
        parsing them: a reachable finding's message asks for it, and importing
        `packaging.specifiers` would cost the flake8 run more than the rest of the message.
        """
        bounds = [version for operator, version in self._comparisons() if operator == "<"]
        return min(bounds, key=order) if bounds else None

    @functools.lru_cache(maxsize=64)  # every witness run of a hazard asks it of one release
    def affects_some(self, lowest: str, highest: str) -> bool:
        """Whether some version from `lowest` to `highest` (both included) carries the defect.

        A release that accepts only versions outside `affected` (TE 1.13 takes flash-attn up
        to 2.6.3, a defect of 2.7.3+) cannot run into it. `affected` is the conjunction of its
        clauses, so one clause that excludes the whole span excludes it; a clause other than an
        ordered comparison or `==` is taken to exclude nothing, which can only say "affected".
        """
        excludes = {
            ">=": lambda bound: compare(bound, highest) > 0,
            ">": lambda bound: compare(bound, highest) >= 0,
            "<": lambda bound: compare(bound, lowest) <= 0,
            "<=": lambda bound: compare(bound, lowest) < 0,
            "==": lambda bound: compare(bound, lowest) < 0 or compare(bound, highest) > 0,
        }
        return not any(
            operator in excludes and excludes[operator](version)
            for operator, version in self._comparisons()
        )

    def _comparisons(self) -> list[tuple[str, str]]:
        """`affected`'s clauses but prefix matches (`versions.clauses`), read without importing
        `packaging.specifiers` (see `fixed_in`)."""
        return [(op, version) for op, version in clauses(self.affected) if "*" not in version]


class TeFix(Record):
    """TE's own later fix: TE switched the backend off here, in its selector or in its C++
    fused-attention query, because it failed (NaN, an illegal memory access, wrong results, a
    backward that is not deterministic under a determinism request, a graph cuDNN refuses).

    Every release before `te_fixed_in`, and every fork of one, still has the hazard. There is no
    kernel package whose version could clear it: cuDNN's own ranges are triggers of the hazard
    (`cudnn_version`), so the kernel-side questions (`affects`, `fixed_in`) answer "always
    affected" and "never fixed by a package", which is what every consumer of `Evidence` needs.
    """

    #: TE's commit (upstream `main`) and pull request that filtered the case.
    commit: str
    pr: int
    #: The first TE release whose own code filters the case.
    te_fixed_in: str
    #: Where that release filters it: "python" (the selector) or "c++" (the fused query).
    layer: str
    #: The failure in TE's own words: the commit message, the log line or the C++ comment.
    failure: str
    #: The last TE release whose own code, the C++ included, selects the backend for a witness.
    te_last_lacking: str
    reference: str = ""
    #: The first release whose filter rests on the C++ query: the fix moved into it, or the
    #: selector's filter tests the query's answer (its sub-backend). The static analysis cannot
    #: see either (`lint_plugin.engine.te_release`).
    cxx_from: str = ""
    #: The last release whose C++ query still filters the case ("" while every later one
    #: does): TE 2.20 rewrote the query (`nvte_get_fused_attn_backend_v2`), whose own rules
    #: leave some cases to cuDNN's support check, which TE's earlier filter did not rely on.
    cxx_until: str = ""
    #: The package the defect sits in, as reports name it ("cuDNN").
    package: str = "cuDNN"
    #: The TE releases whose own code can make a witness's request at all, as a PEP 440
    #: specifier ("" for every one): before TE 2.1 the C++ offers FP8 fused attention no head
    #: dim but 64 and 128; TE 2.4 - 2.7's `Float8CurrentScaling` refuses `fp8_dpa`. A release
    #: outside makes no such request, so it needs no guard (`Hazard.never_made`).
    te_reachable: str = ""
    #: Kernel-side questions of `Evidence` (see the class docstring).
    fixed_in = None
    spellings = ()
    line = None

    @property
    def file(self) -> str:
        return {
            "python": "transformer_engine/pytorch/attention/dot_product_attention/utils.py",
            "c++": "transformer_engine/common/fused_attn/fused_attn.cpp",
        }[self.layer]

    @property
    def text(self) -> str:
        return self.failure

    @property
    def affected(self) -> str:
        return f"TE < {self.te_fixed_in}" if self.te_fixed_in else "every TE release"

    def affects(self, version: str) -> bool:
        return True

    def affects_some(self, lowest: str, highest: str) -> bool:
        return True

    def makes(self, te_version: str) -> bool:
        """Whether TE `te_version`'s own code can make a witness's request (`te_reachable`)."""
        return not self.te_reachable or satisfies(te_version, self.te_reachable)

    @property
    def filtered_in_cxx_from(self) -> str:
        """The first release whose C++ query filters the case, "" if none does."""
        return self.te_fixed_in if self.layer == "c++" else self.cxx_from

    def cites(self) -> str:
        """The fix as a rule and its page cite it."""
        where = "its selector" if self.layer == "python" else "its C++ fused-attention query"
        if not self.te_fixed_in:
            return f"No TE release filters it: {self.reference}"
        return f"TE fixed it in #{self.pr} ({self.commit}), first in {self.te_fixed_in}, in {where}"


class Control(TupleRecord):
    """A named neighbour of the hazard: `changes` applied to a witness leave it outside."""

    name: str
    changes: Mapping[str, Any]


class Hazard(Record):
    id: str
    backend: str
    title: str
    architectures: tuple[tuple[int, int], ...]
    triggers: tuple[Condition, ...]
    message: str
    #: Where a guard belongs, by meaning: "determinism" (inside TE's determinism filters, before
    #: the flags are recombined), "head_dim" (right after TE's FA2 head-dim check),
    #: "num_splits" (right after TE's split-KV filter for the backend) or "compute_capability"
    #: (right after TE's compute-capability filter for the backend) or "fused_backend" (right
    #: after TE's answer from its fused-attention query, where TE puts its cuDNN filters).
    section: str
    #: A kernel's refusal (`Evidence`) or TE's own later fix (`TeFix`).
    evidence: Evidence | TeFix
    #: Kernel version to install on the virtual device for witnesses (an affected one); for a
    #: backend with no package of its own (FusedAttention) empty: cuDNN's version is a trigger.
    kernel_version: str
    #: Concrete values for inputs the triggers only bound (e.g. head dims above 192).
    witness_shapes: tuple[Mapping[str, Any], ...] = ({},)
    controls: tuple[Control, ...] = ()
    #: TE releases in which the backend path exists at all (informational).
    te_releases: str = ""
    #: Further affected kernel versions the witnesses also run with: for TE releases that
    #: refuse `kernel_version` at import (TE 2.1 accepts flash-attn up to 2.7.4.post1 only), or
    #: releases whose code differs (flash-attn-4's newest beta beside the seed's).
    older_kernel_versions: tuple[str, ...] = ()

    @property
    def role(self) -> Role:
        return ROLES[self.backend]

    def guard_fires(self, scenario: Scenario) -> bool:
        """True iff this hazard's guard switches its backend off for `scenario`."""
        return (
            scenario.compute_capability in self.architectures
            and all(condition.holds(scenario) for condition in self.triggers)
            and not self.fixed_for(scenario)
        )

    def never_made(self, te_version: str | None) -> str | None:
        """Why TE `te_version`'s own code never makes this hazard's request at all (a TE fix's
        `te_reachable`: its other code refuses the request before the selector runs), or None
        if it may, or the release is not known. Such a release needs no guard: `verify` and
        the analysis both judge the hazard not applicable there."""
        fix = self.evidence
        if not (isinstance(fix, TeFix) and te_version and valid(te_version)):
            return None
        if fix.makes(te_version):
            return None
        return f"TE {te_version}'s own code never makes this request (TE {fix.te_reachable} does)"

    def fixed_for(self, scenario: Scenario) -> bool:
        """Whether the scenario's kernel is at or past the release that fixed the defect."""
        fixed_in = self.evidence.fixed_in
        installed = self.installed(scenario)
        return fixed_in is not None and installed is not None and compare(installed, fixed_in) >= 0

    def triggered_by(self, scenario: Scenario) -> bool:
        """True iff the kernel would fail for `scenario`: the hazard's definition."""
        return self.guard_fires(scenario) and self.evidence.affects(self.installed(scenario) or "0")

    def installed(self, scenario: Scenario) -> str | None:
        """The installed version of the backend's own package; None for one without a package
        (FusedAttention: TE's C++ and cuDNN, whose version the triggers read)."""
        field = PACKAGE_FIELD.get(self.backend)
        return getattr(scenario, field) if field is not None else None

    def trigger_values(self) -> dict[str, Any]:
        """Scenario fields that put every trigger in its hazardous state.

        A trigger on an input every witness shape sets is left to the shapes (a cuDNN range, a
        mask outside a set), and so is one on an input derived from others (`padded_head_dim`
        from both head dims, `sliding_window` from the window).
        """
        values: dict[str, Any] = {}
        chosen = set.intersection(*(set(shape) for shape in self.witness_shapes))
        for condition in self.triggers:
            if condition.input in chosen or condition.input not in Scenario.FIELDS:
                continue
            if condition.op == "==":
                values[condition.input] = condition.value
            elif condition.op == "in":
                values[condition.input] = condition.value[0]
            elif condition.op in (">=", "<="):
                values[condition.input] = condition.value
            elif condition.op == ">" and isinstance(condition.value, float):
                values[condition.input] = round(condition.value + 0.1, 6)  # dropout, softcap
            elif condition.op == ">" and isinstance(condition.value, int):
                values[condition.input] = condition.value + 1  # e.g. num_splits > 1
            elif condition.op == "<" and isinstance(condition.value, int):
                values[condition.input] = condition.value - 1  # e.g. num_splits < 1
            else:
                raise ValueError(f"{self.id}: cannot derive a witness value for {condition}")
        return values

    def witnesses(self, environments: bool = True, versions: bool = True) -> Iterator[Scenario]:
        """Scenarios inside the hazard: every kernel version x architecture x shape x environment.

        Two environments per point: TE's defaults, and the hazard's backend left as the only
        flash backend with fused attention off (seed 000's reproduction), where "available"
        and "selected" coincide. Without `environments`, TE's defaults alone: the same
        scenarios, less the second of each pair (the static analysis binds no environment).
        Without `versions`, those of `kernel_version` alone: what a judge of a selector that
        never compares the installed release needs (the others differ in it only).
        """
        base = Scenario().with_changes(self.trigger_values())
        for version, arch, shape, env in itertools.product(
            (
                (self.kernel_version, *self.older_kernel_versions)
                if versions
                else (self.kernel_version,)
            ),
            self.architectures,
            self.witness_shapes,
            ({}, ISOLATING_ENV[self.backend]) if environments else ({},),
        ):
            package = (
                {PACKAGE_FIELD[self.backend]: version} if self.backend in PACKAGE_FIELD else {}
            )
            yield base.with_changes({**package, "compute_capability": arch, "env": env, **shape})

    def control_scenarios(self, witness: Scenario) -> Iterator[tuple[Control, Scenario]]:
        for control in self.controls:
            yield control, witness.with_changes(control.changes)

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], where: str = "hazard") -> "Hazard":
        """A hazard from its TOML/JSON form (what users declare and the miner emits).

        Raises `ValueError` naming the offending key, e.g. `hazards[0].triggers[1].op`.
        """
        return _hazard_from_mapping(data, where)

    def to_mapping(self) -> dict[str, Any]:
        """The TOML/JSON form; `Hazard.from_mapping(h.to_mapping()) == h`."""
        return {
            "id": self.id,
            "backend": self.backend,
            "title": self.title,
            "architectures": [list(arch) for arch in self.architectures],
            "triggers": [{"input": c.input, "op": c.op, "value": c.value} for c in self.triggers],
            "message": self.message,
            "section": self.section,
            "evidence": {
                k: [_present(spelling) for spelling in v] if k == "spellings" else v
                for k, v in self.evidence.as_dict().items()
                if v is not None and v != ()
            },
            "kernel_version": self.kernel_version,
            "older_kernel_versions": list(self.older_kernel_versions),
            "witness_shapes": [dict(shape) for shape in self.witness_shapes],
            "controls": [{"name": c.name, "changes": _plain(c.changes)} for c in self.controls],
            "te_releases": self.te_releases,
        }


SECTIONS = ("determinism", "head_dim", "num_splits", "compute_capability", "fused_backend")
#: What a hazard's id must match: a flake8 code of TEA's (compiled where a hazard is declared).
HAZARD_ID = r"TEA0[0-9]{2}"


def _present(values: Mapping[str, Any]) -> dict[str, Any]:
    """TOML has no null: keys whose value is None are left out."""
    return {k: v for k, v in values.items() if v is not None}


def _plain(changes: Mapping[str, Any]) -> dict[str, Any]:
    return {k: list(v) if isinstance(v, tuple) else v for k, v in changes.items()}


def _require(data: Mapping[str, Any], key: str, kind: type, where: str) -> Any:
    if key not in data:
        raise ValueError(f"{where}.{key}: missing")
    value = data[key]
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if not isinstance(value, kind):
        raise ValueError(f"{where}.{key}: expected {kind.__name__}, got {type(value).__name__}")
    return value


def _architecture(value: Any, where: str) -> tuple[int, int]:
    if not (
        isinstance(value, (list, tuple))
        and len(value) == 2
        and all(isinstance(v, int) for v in value)
    ):
        raise ValueError(f"{where}: expected [major, minor], got {value!r}")
    return (value[0], value[1])


def _hazard_from_mapping(data: Mapping[str, Any], where: str) -> Hazard:
    known = set(Hazard.FIELDS)
    unknown = sorted(set(data) - known)
    if unknown:
        raise ValueError(f"{where}.{unknown[0]}: unknown key; known: {sorted(known)}")
    hazard_id = _require(data, "id", str, where)
    if not re.fullmatch(HAZARD_ID, hazard_id):
        raise ValueError(f"{where}.id: {hazard_id!r} must look like TEA0NN (a flake8 code)")
    backend = _require(data, "backend", str, where)
    if backend not in ISOLATING_ENV:
        raise ValueError(f"{where}.backend: {backend!r} is not one of {sorted(ISOLATING_ENV)}")
    section = _require(data, "section", str, where)
    if section not in SECTIONS:
        raise ValueError(f"{where}.section: {section!r} is not one of {list(SECTIONS)}")
    triggers = []
    for index, trigger in enumerate(_require(data, "triggers", list, where)):
        at = f"{where}.triggers[{index}]"
        try:
            triggers.append(
                Condition(
                    _require(trigger, "input", str, at),
                    _require(trigger, "op", str, at),
                    trigger.get("value"),
                )
            )
        except ValueError as error:
            raise ValueError(f"{at}: {error}") from None
    evidence_data = dict(_require(data, "evidence", dict, where))
    try:
        if "pr" in evidence_data:  # TE's own fix: its PR, commit and releases
            evidence = TeFix(**evidence_data)
        else:
            spellings = tuple(Spelling(**s) for s in evidence_data.pop("spellings", ()))
            evidence = Evidence(**evidence_data, spellings=spellings)
    except TypeError as error:
        raise ValueError(f"{where}.evidence: {error}") from None
    controls = tuple(
        Control(
            _require(control, "name", str, f"{where}.controls[{index}]"),
            {
                k: tuple(v) if isinstance(v, list) else v
                for k, v in _require(control, "changes", dict, f"{where}.controls[{index}]").items()
            },
        )
        for index, control in enumerate(data.get("controls", []))
    )
    return Hazard(
        id=hazard_id,
        backend=backend,
        title=_require(data, "title", str, where),
        architectures=tuple(
            _architecture(a, f"{where}.architectures[{i}]")
            for i, a in enumerate(_require(data, "architectures", list, where))
        ),
        triggers=tuple(triggers),
        message=_require(data, "message", str, where),
        section=section,
        evidence=evidence,
        kernel_version=_require(data, "kernel_version", str, where),
        older_kernel_versions=tuple(data.get("older_kernel_versions", ())),
        witness_shapes=tuple(data.get("witness_shapes", [{}])),
        controls=controls,
        te_releases=data.get("te_releases", ""),
    )
