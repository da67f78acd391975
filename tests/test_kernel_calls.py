"""The analyzer asks FA4's own `_validate_head_dims`, as the harness does (TE 2.16+ defer to it).

A call `Facts.calls` says raises does not complete, even where the slice would skip it: the
selector's `try` goes on in its handler alone. The facts come from the release's own function
on the witnesses' head dims.
"""

from __future__ import annotations

import ast
import functools
import textwrap

import pytest

from lint_plugin.engine.absint import join
from lint_plugin.engine.interpreter import RAISES, Facts, Interpreter
from lint_plugin.engine.kernel_calls import FA4_VALIDATOR, kernel_facts
from lint_plugin.engine.program import Program
from lint_plugin.engine.slicing import Slice
from selector_patch.scenario import Scenario

SELECTOR = """
def get_attention_backend(attention_params):
    flag = True
    try:
        FlashAttentionUtils.v4_validate_head_dims(attention_params.head_dim_qk)
    except AssertionError:
        flag = False
    return flag
"""


def verdict(calls, sliced: bool) -> str:
    program = Program(ast.parse(textwrap.dedent(SELECTOR)).body[0])
    relevant = Slice(program, frozenset({"flag"})) if sliced else None
    states = Interpreter(program, Facts(calls=calls), relevant=relevant).run()
    value = functools.reduce(join, [state.vars["flag"] for state in states])
    return "off" if value.truth is False else "maybe"


@pytest.mark.parametrize("sliced", [False, True], ids=["whole", "sliced"])
def test_a_call_that_raises_leaves_only_the_handler(sliced):
    assert verdict({"v4_validate_head_dims": RAISES}, sliced) == "off"
    assert verdict({}, sliced) == "maybe"


def test_the_releases_validator_decides_the_witnesses_head_dims():
    def facts(**inputs):
        witness = Scenario(flash_attn_4="4.0.0b36", **inputs)
        return kernel_facts([witness], {FA4_VALIDATOR})

    names, calls = facts(compute_capability=(9, 0), head_dim_qk=512, head_dim_v=512)
    assert names[FA4_VALIDATOR].truth is True and calls == {"v4_validate_head_dims": RAISES}
    assert facts(compute_capability=(9, 0), head_dim_qk=128, head_dim_v=128)[1] == {}
    # (256, 256) is FA4's hd256 shape on SM100; 248 is neither it nor the standard range.
    assert facts(compute_capability=(10, 0), head_dim_qk=256, head_dim_v=256)[1] == {}
    assert facts(compute_capability=(10, 0), head_dim_qk=248, head_dim_v=248)[1] != {}
    # A selector that does not ask the validator gets no facts about it.
    assert kernel_facts([Scenario(flash_attn_4="4.0.0b36")], set()) == ({}, {})
