"""The hazard registry: every known case where TE's selector picks a kernel that cannot run.

Each hazard is data, not code: which backend (by role), on which architectures, under which
trigger conditions; the line TE should log when it filters the case; the kernel-side evidence;
and the *controls*, nearby inputs where the backend must stay eligible. Witness scenarios (inputs
inside the hazard) and control scenarios are derived here, once, and shared by the harness, the
analyzer, the codemod's self-check and the runtime patch. A hazard's witnesses are its INVALID
examples and its controls its VALID ones; `tests/test_registry.py` checks both against the
hazard's own trigger.
"""

from __future__ import annotations

import functools
import itertools
import re
from typing import Any, Iterator, Mapping

from selector_patch.records import Record, TupleRecord
from selector_patch.roles import ROLES, Role
from selector_patch.scenario import Condition, Scenario
from selector_patch.versions import compare, order

#: Scenario field holding the installed version of each flash-attn role's package.
PACKAGE_FIELD = {"FA2": "flash_attn_2", "FA3": "flash_attn_3", "FA4": "flash_attn_4"}
#: `NVTE_*` switches that leave a role as the only flash backend, beside unfused attention.
ISOLATING_ENV = {
    "FA2": {"NVTE_FLASH_ATTN_V3": "0", "NVTE_FLASH_ATTN_V4": "0", "NVTE_FUSED_ATTN": "0"},
    "FA3": {"NVTE_FLASH_ATTN_V2": "0", "NVTE_FLASH_ATTN_V4": "0", "NVTE_FUSED_ATTN": "0"},
    "FA4": {"NVTE_FLASH_ATTN_V2": "0", "NVTE_FLASH_ATTN_V3": "0", "NVTE_FUSED_ATTN": "0"},
}


@functools.lru_cache(maxsize=64)
def _specifier(affected: str):
    """`affected` parsed, once: `packaging.specifiers` loads only when a version is judged."""
    from packaging.specifiers import SpecifierSet

    return SpecifierSet(affected, prereleases=True)


#: The operators of `Evidence.affected`'s clauses, longer first (`_comparisons`).
_OPERATORS = ("===", "~=", "==", "!=", "<=", ">=", "<", ">")


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
        """`affected`'s clauses as `SpecifierSet` splits them (at commas), each as (operator,
        version text), read without importing `packaging.specifiers` (see `fixed_in`)."""
        found = []
        for clause in (part.strip() for part in self.affected.split(",")):
            for operator in _OPERATORS:  # `(===|~=|...)\s*([^\s*]+)`, without compiling it
                version = clause[len(operator) :].lstrip()
                if (
                    clause.startswith(operator)
                    and version
                    and not any(char.isspace() or char == "*" for char in version)
                ):
                    found.append((operator, version))
                    break
        return found


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
    #: (right after TE's compute-capability filter for the backend).
    section: str
    evidence: Evidence
    #: Kernel version to install on the virtual device for witnesses (an affected one).
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

    def fixed_for(self, scenario: Scenario) -> bool:
        """Whether the scenario's kernel is at or past the release that fixed the defect."""
        fixed_in = self.evidence.fixed_in
        installed = getattr(scenario, PACKAGE_FIELD[self.backend])
        return fixed_in is not None and installed is not None and compare(installed, fixed_in) >= 0

    def triggered_by(self, scenario: Scenario) -> bool:
        """True iff the kernel would fail for `scenario`: the hazard's definition."""
        return self.guard_fires(scenario) and self.evidence.affects(
            getattr(scenario, PACKAGE_FIELD[self.backend]) or "0"
        )

    def trigger_values(self) -> dict[str, Any]:
        """Scenario fields that put every trigger in its hazardous state."""
        values: dict[str, Any] = {}
        for condition in self.triggers:
            if condition.input == "padded_head_dim":
                continue  # chosen by witness_shapes, which set both head dims
            if condition.op == "==":
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
            yield base.with_changes(
                {
                    PACKAGE_FIELD[self.backend]: version,
                    "compute_capability": arch,
                    "env": env,
                    **shape,
                }
            )

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


#: Where flash-attn-4 refuses on SM 12.x: its CuTe interface, branch `arch // 10 == 12`.
FA4_INTERFACE = "flash_attn/cute/interface.py"
#: Every architecture of the SM 12.x family that flash-attn-4 runs its SM 12.0 kernels on.
SM12X = ((12, 0), (12, 1))
#: Every architecture of the SM 8.x family (A100; RTX 30xx; Jetson Orin; RTX 40xx / L4 / L40):
#: flash-attn-4 tests the family, `arch // 10`.
SM8X = ((8, 0), (8, 6), (8, 7), (8, 9))

#: A backward refusal's witness shapes: training, and eval with a backward (autograd records the
#: call of a module in eval()).
WITH_BACKWARD = ({}, {"training": False})
#: A backward refusal's controls: the calls autograd does not record, in eval and in training.
FORWARD_ONLY = (
    Control("forward-only eval", {"training": False, "backward": False}),
    Control("forward only", {"backward": False}),
)

FA4_SM12X_DETERMINISTIC_BACKWARD = Hazard(
    id="TEA001",
    backend="FA4",
    title="FlashAttention 4 chosen for deterministic backward on SM 12.x",
    architectures=SM12X,
    triggers=(
        Condition("deterministic", "==", True),
        Condition("backward", "==", True),
    ),
    message=(
        "Disabling FlashAttention 4 for deterministic backward on sm120: the CuTe SM 12.0 "
        "backward kernel does not support deterministic execution."
    ),
    section="determinism",
    evidence=Evidence(
        package="flash-attn-4",
        file=FA4_INTERFACE,
        line=2352,
        text='assert deterministic is False, "deterministic backward not supported on SM 12.0"',
        affected=">=4.0.0b5",
        reference=(
            "backward (`_flash_attn_bwd`), branch `arch // 10 == 12`: the same assert in every"
            " release with an SM 12.x path, 4.0.0b5 (line 1028) through 4.0.0b36; 4.0.0b4 and"
            " older refuse SM 12.x altogether. DotProductAttention passes `deterministic` to FA4"
            " whenever it has no inference params, so a backward of a module in eval() asserts"
            " too"
        ),
    ),
    kernel_version="4.0.0b24",
    older_kernel_versions=("4.0.0b36",),
    witness_shapes=WITH_BACKWARD,
    controls=(
        *FORWARD_ONLY,
        Control("nondeterministic", {"deterministic": False}),
        Control("sm90", {"compute_capability": (9, 0)}),
        Control("sm100", {"compute_capability": (10, 0)}),
    ),
    te_releases="2.15.0 onward",
)

FA4_SM12X_SPLIT_KV_FORWARD = Hazard(
    id="TEA003",
    backend="FA4",
    title="FlashAttention 4 chosen for split-KV (num_splits > 1) on SM 12.x",
    architectures=SM12X,
    triggers=(Condition("num_splits", ">", 1),),
    message=(
        "Disabling FlashAttention 4 for num_splits > 1 on sm120: the CuTe SM 12.0 forward"
        " kernel does not support split-KV."
    ),
    section="num_splits",
    evidence=Evidence(
        package="flash-attn-4",
        file=FA4_INTERFACE,
        line=417,
        text='assert num_splits <= 1, "SM120 forward only supports num_splits=1"',
        affected=">=4.0.0b5",
        reference=(
            "forward, branch `arch // 10 == 12` (in `_flash_attn_fwd` before 4.0.0b22, where"
            " `is_split_kv = num_splits > 1`): a forward refusal, so eval and inference assert"
            " too. TE passes `num_splits` to FA4 and its own FA4 split-KV filter only excludes"
            " SM < 10.0"
        ),
        spellings=(
            Spelling(
                ">=4.0.0b22,<4.0.0b36",
                'assert num_splits == 1, "SM120 forward only supports num_splits=1"',
                417,
            ),
            Spelling(
                ">=4.0.0b5,<4.0.0b22",
                'assert not is_split_kv, "SplitKV not supported on SM 12.0 in this PR"',
                944,
            ),
        ),
    ),
    kernel_version="4.0.0b24",
    older_kernel_versions=("4.0.0b36",),
    witness_shapes=({}, {"training": False, "backward": False}),
    controls=(
        Control("num_splits 1", {"num_splits": 1}),
        Control("sm100", {"compute_capability": (10, 0)}),
        Control("sm90", {"compute_capability": (9, 0)}),
    ),
    te_releases="2.15.0 onward",
)

FA4_SM12X_SPLIT_HEURISTIC_FORWARD = Hazard(
    id="TEA004",
    backend="FA4",
    title="FlashAttention 4 < 4.0.0b36 chosen for its split heuristic (num_splits < 1) on SM 12.x",
    architectures=SM12X,
    triggers=(Condition("num_splits", "<", 1),),
    message=(
        "Disabling FlashAttention 4 < 4.0.0b36 for num_splits < 1 on sm120: its CuTe SM 12.0"
        " forward kernel only supports num_splits=1."
    ),
    section="num_splits",
    evidence=Evidence(
        package="flash-attn-4",
        file=FA4_INTERFACE,
        line=417,
        text='assert num_splits == 1, "SM120 forward only supports num_splits=1"',
        affected=">=4.0.0b5,<4.0.0b36",
        reference=(
            "forward, branch `arch // 10 == 12`. num_splits < 1 asks FA4's split heuristic:"
            " before 4.0.0b22 the SM 12.0 forward refuses whenever the heuristic splits, then"
            " refuses it outright; 4.0.0b36 accepts it on SM 12.x (`assert num_splits <= 1`, then"
            " `num_splits = 1`), so the guard keeps FA4 from 4.0.0b36 on"
        ),
        spellings=(
            Spelling(
                ">=4.0.0b5,<4.0.0b22",
                'assert not is_split_kv, "SplitKV not supported on SM 12.0 in this PR"',
                944,
            ),
        ),
    ),
    kernel_version="4.0.0b24",
    witness_shapes=({}, {"training": False, "backward": False}),
    controls=(
        Control("num_splits 1", {"num_splits": 1}),
        Control("FA4 4.0.0b36", {"flash_attn_4": "4.0.0b36"}),
        Control("sm100", {"compute_capability": (10, 0)}),
    ),
    te_releases="2.15.0 onward",
)

FA4_SM8X_BACKWARD = Hazard(
    id="TEA005",
    backend="FA4",
    title="FlashAttention 4 chosen for a backward on SM 8.x",
    architectures=SM8X,
    triggers=(Condition("backward", "==", True),),
    message=(
        "Disabling FlashAttention 4 for backward on sm8x: its CuTe backward supports SM 9.x,"
        " 10.x, 11.x and 12.x only."
    ),
    section="compute_capability",
    evidence=Evidence(
        package="flash-attn-4",
        file=FA4_INTERFACE,
        line=2288,
        text=(
            'assert arch // 10 in [9, 10, 11, 12], "Unsupported compute capability. Supported:'
            ' 9.x, 10.x, 11.x, 12.x"'
        ),
        affected=">=4.0.0b5",
        reference=(
            "backward (`_flash_attn_bwd`), its first check: the same assert in every release"
            " from 4.0.0b5 (line 996; 4.0.0b24: line 1353) through 4.0.0b36, while the forward"
            " (`_flash_attn_fwd`) accepts 8.x (`assert arch // 10 in [8, 9, 10, 11, 12]`), so a"
            " forward-only call runs; 4.0.0b3 and 4.0.0b4 refuse SM 8.x in the forward too. TE"
            " 2.15 - 2.18 switch FA4 off below sm80 only, TE 2.19 below sm90 (its comment: FA4"
            " does not currently support SM8x)"
        ),
    ),
    kernel_version="4.0.0b24",
    older_kernel_versions=("4.0.0b36",),
    witness_shapes=WITH_BACKWARD,
    controls=(
        *FORWARD_ONLY,
        Control("sm90", {"compute_capability": (9, 0)}),
        Control("sm100", {"compute_capability": (10, 0)}),
    ),
    te_releases="2.15.0 onward (2.19.0 and newer switch FA4 off below sm90 themselves)",
)

#: Where flash-attn-4 runs its dedicated head-dim-256 SM 10.x kernels: `arch // 10 in [10, 11]`
#: (4.0.0b15 on; 4.0.0b11 - 4.0.0b14 test `arch // 10 == 10`).
SM10X_SM11X = ((10, 0), (10, 3), (11, 0))
#: The head dims of flash-attn-4's dedicated kernels, with per-sequence lengths: TE passes
#: `seqused_q` / `seqused_k` to FA4 whenever there is padding between sequences.
HD256_PADDED_BETWEEN_SEQS = (
    Condition("head_dim_qk", "==", 256),
    Condition("head_dim_v", "==", 256),
    Condition("pad_between_seqs", "==", True),
)
#: Packed sequences (THD) with padding between them: where TE reads `pad_between_seqs`.
PACKED_WITH_PADDING = {"qkv_layout": "thd_thd_thd", "attn_mask_type": "padding_causal"}
#: The controls both head-dim-256 seqused hazards share: each trigger and the architecture.
HD256_SEQUSED_CONTROLS = (
    Control("no padding between sequences", {"pad_between_seqs": False}),
    Control("head dim 128", {"head_dim_qk": 128, "head_dim_v": 128}),
    Control("sm90", {"compute_capability": (9, 0)}),
    Control("sm120", {"compute_capability": (12, 0)}),
)
#: Why TE 2.19 and newer reach these refusals and 2.15 - 2.18 do not.
HD256_SEQUSED_TE = (
    " TE 2.19 and newer pass `seqused_q` / `seqused_k` to FA4's `flash_attn_varlen_func`"
    " whenever `pad_between_seqs` (2.20.2: backends.py:1251); 2.15 - 2.18 pass none and switch"
    " FA4 off for THD with padding between sequences"
)


def _hd256_seqused_evidence(direction: str, function: str, lines, fixed_in: str) -> Evidence:
    """The seqused assert of the dedicated head-dim-256 `direction`, from 4.0.0b11 until
    `fixed_in`; `lines`: in 4.0.0b11, in 4.0.0b24 (the seed's) and in the last affected."""
    first, seed, last = lines
    last_affected = f"4.0.0b{int(fixed_in.rpartition('b')[2]) - 1}"
    return Evidence(
        package="flash-attn-4",
        file=FA4_INTERFACE,
        line=last,
        text=(
            "assert seqused_q is None and seqused_k is None, "
            f'"SM100 {direction} with head_dim=256 does not support seqused_q/seqused_k"'
        ),
        affected=f">=4.0.0b11,<{fixed_in}",
        reference=(
            f"{direction} (`{function}`), branch `use_dedicated_hd256_kernel`: from 4.0.0b11"
            f" (line {first}; 4.0.0b24: line {seed}) through {last_affected}; {fixed_in}"
            f" supports seqused in its head-dim-256 {direction}." + HD256_SEQUSED_TE
        ),
    )


FA4_SM100_HD256_SEQUSED_FORWARD = Hazard(
    id="TEA006",
    backend="FA4",
    title=(
        "FlashAttention 4 < 4.0.0b31 chosen for head dim 256 with padding between sequences on"
        " SM 10.x / 11.0"
    ),
    architectures=SM10X_SM11X,
    triggers=HD256_PADDED_BETWEEN_SEQS,
    message=(
        "Disabling FlashAttention 4 < 4.0.0b31 for head_dim 256 with padding between sequences on"
        " sm100/sm103/sm110: its dedicated head-dim-256 forward does not support"
        " seqused_q/seqused_k."
    ),
    section="compute_capability",
    evidence=_hd256_seqused_evidence("forward", "_flash_attn_fwd", (858, 907, 1318), "4.0.0b31"),
    kernel_version="4.0.0b24",
    witness_shapes=({**PACKED_WITH_PADDING, "backward": False},),
    controls=(
        *HD256_SEQUSED_CONTROLS,
        Control("FA4 4.0.0b31", {"flash_attn_4": "4.0.0b31"}),
    ),
    te_releases="2.19.0 onward (2.15.0 - 2.18.0 pass no seqused to FA4)",
)

FA4_SM100_HD256_SEQUSED_BACKWARD = Hazard(
    id="TEA007",
    backend="FA4",
    title=(
        "FlashAttention 4 < 4.0.0b33 chosen for a head-dim-256 backward with padding between"
        " sequences on SM 10.x / 11.0"
    ),
    architectures=SM10X_SM11X,
    triggers=(*HD256_PADDED_BETWEEN_SEQS, Condition("backward", "==", True)),
    message=(
        "Disabling FlashAttention 4 < 4.0.0b33 for backward with head_dim 256 and padding"
        " between sequences on sm100/sm103/sm110: its dedicated head-dim-256 backward does not"
        " support seqused_q/seqused_k."
    ),
    section="compute_capability",
    evidence=_hd256_seqused_evidence("backward", "_flash_attn_bwd", (1711, 1907, 2577), "4.0.0b33"),
    #: The last release whose backward alone refuses: its forward-only control runs FA4 (with
    #: 4.0.0b24, TEA006 would refuse it).
    kernel_version="4.0.0b32",
    older_kernel_versions=("4.0.0b24",),
    witness_shapes=tuple({**PACKED_WITH_PADDING, **shape} for shape in WITH_BACKWARD),
    controls=(
        *HD256_SEQUSED_CONTROLS,
        *FORWARD_ONLY,
        Control("FA4 4.0.0b33", {"flash_attn_4": "4.0.0b33"}),
    ),
    te_releases="2.19.0 onward (2.15.0 - 2.18.0 pass no seqused to FA4)",
)

FA2_99KB_HEAD_DIM_DROPOUT_BACKWARD = Hazard(
    id="TEA002",
    backend="FA2",
    title="FlashAttention 2 chosen for head dim > 192 with dropout on 99 KB shared-memory GPUs",
    architectures=((8, 6), (8, 9), (12, 0), (12, 1)),
    triggers=(
        Condition("padded_head_dim", ">", 192),
        Condition("attention_dropout", ">", 0.0),
        Condition("training", "==", True),
        Condition("backward", "==", True),
    ),
    message=(
        "Disabling FlashAttention 2 for head_dim > 192 with dropout on GPUs with 99 KB of shared"
        " memory per block: its backward launches no kernel and leaves dq/dk/dv unwritten."
    ),
    section="head_dim",
    evidence=Evidence(
        package="flash-attn",
        file="csrc/flash_attn/src/flash_bwd_launch_template.h",
        line=None,
        text="run_mha_bwd_hdim256: `} else { // sm86 and sm89, max smem is 99 KB. Only works"
        " without dropout.` launches a kernel only `if constexpr(!Is_dropout)`",
        affected=">=2.7.3",
        reference="check removed in flash-attn 2.7.3 (bbb21d6, PR #1427); flash-attn #3053",
    ),
    kernel_version="2.8.3",
    older_kernel_versions=("2.7.4.post1",),
    witness_shapes=(
        {"head_dim_qk": 256, "head_dim_v": 256},
        {"head_dim_qk": 224, "head_dim_v": 224},
        {"head_dim_qk": 192, "head_dim_v": 256},
    ),
    controls=(
        Control("no dropout", {"attention_dropout": 0.0}),
        *FORWARD_ONLY,
        Control("head dim 192", {"head_dim_qk": 192, "head_dim_v": 192}),
        Control("sm100", {"compute_capability": (10, 0)}),
        Control("sm90", {"compute_capability": (9, 0)}),
        Control("sm80", {"compute_capability": (8, 0)}),
    ),
    te_releases="1.9 onward (FA2 head dim > 192 on sm120 admitted from 2.1)",
)

SECTIONS = ("determinism", "head_dim", "num_splits", "compute_capability")
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
    if backend not in PACKAGE_FIELD:
        raise ValueError(f"{where}.backend: {backend!r} is not one of {sorted(PACKAGE_FIELD)}")
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


HAZARDS: tuple[Hazard, ...] = (
    FA4_SM12X_DETERMINISTIC_BACKWARD,
    FA2_99KB_HEAD_DIM_DROPOUT_BACKWARD,
    FA4_SM12X_SPLIT_KV_FORWARD,
    FA4_SM12X_SPLIT_HEURISTIC_FORWARD,
    FA4_SM8X_BACKWARD,
    FA4_SM100_HD256_SEQUSED_FORWARD,
    FA4_SM100_HD256_SEQUSED_BACKWARD,
)


def get_hazard(hazard_id: str) -> Hazard:
    for hazard in HAZARDS:
        if hazard.id == hazard_id:
            return hazard
    raise KeyError(f"unknown hazard {hazard_id!r}; known: {[h.id for h in HAZARDS]}")
