"""Splitting a run by the flash flags (`lint_plugin.engine.dispatch.partition`): what
`Interpreter.run` relies on to pass over the statements its slice skips without splitting
again."""

from __future__ import annotations

from lint_plugin.engine.absint import State, const, unknown
from lint_plugin.engine.dispatch import partition

FLAGS = ("use_flash_attention_2", "use_flash_attention_4")


def truths(states: list[State]) -> list[tuple[bool | None, ...]]:
    return [tuple(s.vars[f].truth if f in s.vars else None for f in FLAGS) for s in states]


def test_a_partition_of_a_partition_is_itself() -> None:
    split = partition(FLAGS)
    undecided = State({FLAGS[0]: unknown(), FLAGS[1]: unknown(), "other": const(1)})
    decided = State({FLAGS[0]: const(True), FLAGS[1]: const(False)})
    parts = split([undecided, decided])
    assert sorted(truths(parts)) == [(False, False), (False, True), (True, False), (True, True)]
    again = split(parts)
    assert truths(again) == truths(parts)
    assert all(mine == theirs for mine, theirs in zip(again, parts))


def test_a_decided_state_is_a_part_as_it_is() -> None:
    decided = State({FLAGS[0]: const(False), FLAGS[1]: const(True)})
    assert partition(FLAGS)([decided])[0] is decided
