"""The kernel's own decisions TE asks while selecting, as the analysis knows them.

TE 2.16+ defer FA4's head-dim support to FA4's own `_validate_head_dims`: TE's import-time code
installs it as `FlashAttentionUtils.v4_validate_head_dims`, and the selector calls it in a `try`
that switches FA4 off on its `AssertionError`. The harness runs the installed release's function
(`selector_patch.harness.kernels`); so does the analysis, on the witnesses it runs, where its
`Facts` say `kernels` (the miner: flake8 and the codemod never import torch or fetch a wheel). The
attribute is then that function (not None), and where the function refuses every witness the
call raises (`interpreter.RAISES`): the run goes on in the handler alone. Where it accepts some,
or the witnesses pin no FA4 release, the call stays unknown, which may raise or not.
"""

from __future__ import annotations

from typing import Container, Sequence

from lint_plugin.engine.absint import Value, const, unknown
from lint_plugin.engine.interpreter import RAISES
from selector_patch.scenario import Scenario

#: What TE's selector calls FA4's validator by.
FA4_VALIDATOR = "FlashAttentionUtils.v4_validate_head_dims"


def kernel_facts(
    witnesses: Sequence[Scenario], text_names: Container[str]
) -> tuple[dict[str, Value], dict[str, Value]]:
    """(names, calls) facts for a run of `witnesses` of a selector whose module reads
    `text_names`: FA4's validator where the selector asks it and the witnesses pin one FA4
    release that has it."""
    versions = {witness.flash_attn_4 for witness in witnesses}
    if FA4_VALIDATOR not in text_names or len(versions) != 1 or None in versions:
        return wired_validator(text_names), {}
    validate = _validator(versions.pop())
    if validate is None:
        return wired_validator(text_names), {}
    names = {FA4_VALIDATOR: const(validate)}
    if all(_refuses(validate, witness) for witness in witnesses):
        return names, {FA4_VALIDATOR.rpartition(".")[2]: RAISES}
    return names, {}


def wired_validator(text_names: Container[str]) -> dict[str, Value]:
    """The validator as known without running it (flake8, the codemod): a function, which may
    refuse or accept. TE's import-time wiring (`backends.py`, 2.16 - 2.20.2) imports
    `_validate_head_dims` with FA4's entry points and installs it in the branch that sets
    `v4_is_installed`, so where FA4 is installed it is never None, and the filters TE writes
    under it (FA4's symmetric head dim 512 on SM100, 2.19) hold on every path."""
    return {FA4_VALIDATOR: unknown(truth=True)} if FA4_VALIDATOR in text_names else {}


def _validator(version: str):
    """The release's `_validate_head_dims`, None where it has none or its wheel is not at hand."""
    # Imported here: the harness's kernel stand-ins load torch, which flake8's path must not.
    from selector_patch.harness.kernels import fa4_interface
    from selector_patch.sources import SourceError

    try:
        return fa4_interface(version).__dict__.get("_validate_head_dims")
    except (SourceError, OSError):
        return None


def _refuses(validate, witness: Scenario) -> bool:
    """Whether the validator asserts on the witness's head dims, as TE calls it: with the
    major compute capability and FA4's alignment for the q/k/v dtype."""
    import torch

    element_size = torch.empty(0, dtype=getattr(torch, witness.qkv_dtype)).element_size()
    try:
        validate(
            witness.head_dim_qk,
            witness.head_dim_v,
            witness.compute_capability[0],
            16 // element_size,
        )
    except AssertionError:
        return True
    return False
