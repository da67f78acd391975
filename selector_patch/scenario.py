"""One concrete call of TE's attention selector, in words that do not depend on the TE release.

A `Scenario` is what a user of `DotProductAttention` controls (mode, determinism, dropout, head
dimensions, `NVTE_*` variables) plus what the machine answers (compute capability, cuDNN, the
installed flash-attn packages; cuDNN's fused-backend answer is TE's own C++'s unless overridden). The harness turns it into the
`AttentionParams` of a given release; the analyzer binds the same facts to the selector's
names; the codemod's self-check and the runtime patch reuse the very same objects. One
vocabulary keeps those three judges comparable.
"""

from __future__ import annotations

import dataclasses
import operator
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

#: Inputs a hazard trigger may talk about, and how each is read off a scenario.
INPUTS: dict[str, Callable[["Scenario"], Any]] = {
    "deterministic": lambda s: s.deterministic,
    "training": lambda s: s.training,
    "backward": lambda s: s.backward,
    "attention_dropout": lambda s: s.attention_dropout,
    "padded_head_dim": lambda s: s.padded_head_dim,
    "num_splits": lambda s: s.num_splits,
    "has_score_mod": lambda s: s.has_score_mod,
    "softmax_type": lambda s: s.softmax_type,
}
#: Inputs of optional features: a plain call leaves them at the `Scenario` defaults, and the
#: filter-coverage rules keep them there (a split-KV filter is not a compute-capability filter
#: of the plain call). Kernel refusals found by the miner are keyed on them.
OPTIONAL_FEATURES = ("num_splits", "has_score_mod", "softmax_type")

OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    "==": operator.eq,
    "!=": operator.ne,
    ">": operator.gt,
    ">=": operator.ge,
    "<": operator.lt,
    "<=": operator.le,
}


@dataclass(frozen=True)
class Condition:
    """`input op value` over a scenario, e.g. `attention_dropout > 0`."""

    input: str
    op: str
    value: Any

    def __post_init__(self) -> None:
        if self.input not in INPUTS:
            raise ValueError(f"unknown trigger input {self.input!r}; known: {sorted(INPUTS)}")
        if self.op not in OPERATORS:
            raise ValueError(f"unknown trigger operator {self.op!r}; known: {sorted(OPERATORS)}")

    def holds(self, scenario: "Scenario") -> bool:
        return OPERATORS[self.op](INPUTS[self.input](scenario), self.value)

    def __str__(self) -> str:
        return f"{self.input} {self.op} {self.value!r}"


@dataclass(frozen=True)
class Scenario:
    """Inputs of one selector call; defaults are seed 000's reproduction (BF16 BSHD, causal),
    on cuDNN 9.18.1."""

    # the (virtual) machine
    compute_capability: tuple[int, int] = (9, 0)
    #: A cuDNN that no release's C++ refuses outright (TE 2.6+ refuse F16/BF16 on 9.10.0 and
    #: 9.10.1, TE 2.14+ refuse sm120 below 9.18.1).
    cudnn_version: tuple[int, int, int] = (9, 18, 1)
    flash_attn_2: str | None = "2.8.3"
    flash_attn_3: str | None = None
    #: The flash-attention release whose `hopper/` the installed FA3 was built from (FA3 calls
    #: itself 3.0.0b1 in each of them, and their interfaces differ).
    flash_attn_3_source: str = "2.8.3"
    flash_attn_4: str | None = "4.0.0b24"
    #: The nvidia-cutlass-dsl beside flash-attn-4 (4.0.0b24 needs 4.6.2 or newer).
    cutlass_dsl: str | None = "4.6.2"
    #: An override of cuDNN's answer to TE's fused-backend query (a `FusedAttnBackend` member
    #: name); None: TE's own C++ answers, or an assumption where it is not at hand.
    fused_backend: str | None = None
    # what the user asked for
    deterministic: bool = False
    training: bool = True
    backward: bool = True
    attention_dropout: float = 0.0
    head_dim_qk: int = 128
    head_dim_v: int = 128
    batch_size: int = 2
    num_heads: int = 8
    num_gqa_groups: int = 8
    max_seqlen_q: int = 128
    max_seqlen_kv: int = 128
    qkv_layout: str = "bshd_bshd_bshd"
    attn_mask_type: str = "causal"
    # optional features (`OPTIONAL_FEATURES`), off by default
    num_splits: int = 1
    has_score_mod: bool = False
    softmax_type: str = "vanilla"
    #: `NVTE_*` variables set for this call, as sorted (name, value) pairs.
    env: tuple[tuple[str, str], ...] = field(default=())

    @property
    def padded_head_dim(self) -> int:
        """What flash-attn pads both head dims to, the quantity its kernels are chosen by."""
        return max(self.head_dim_qk, self.head_dim_v)

    @property
    def sm(self) -> str:
        major, minor = self.compute_capability
        return f"sm{10 * major + minor}"

    def with_changes(self, changes: Mapping[str, Any]) -> "Scenario":
        """A copy with `changes` applied; `env` entries are merged, not replaced."""
        changes = dict(changes)
        env = dict(self.env)
        env.update(changes.pop("env", {}))
        for name in ("compute_capability", "cudnn_version"):
            if name in changes:
                changes[name] = tuple(changes[name])
        return dataclasses.replace(self, env=tuple(sorted(env.items())), **changes)

    def describe(self) -> dict[str, Any]:
        """Plain JSON-able inputs, for reports."""
        described = dataclasses.asdict(self)
        described["env"] = dict(self.env)
        return described
