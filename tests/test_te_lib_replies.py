"""A kept reply of the helper process answers only where every variable it read reads the same.

`te_cxx.replies` replays a reply's reads against the caller's environment, in order. The
releases whose libraries the suite runs (2.18.0, 2.19.0) read no variable in their fused query,
so the replay is judged here on its own, with recorded reads as TE's older queries make them
(`NVTE_FUSED_ATTN_BACKEND`, read only on the paths that offer two backends).
"""

from __future__ import annotations

from selector_patch.te_cxx.replies import Replies

REQUEST = '{"machine": [90, 91801], "arguments": [1, 2]}'
SHORT = {"answer": [0, []]}
LONG = {"answer": [1, []]}


def environment(**values):
    return lambda name: values.get(name)


def test_a_reply_answers_where_every_read_reads_the_same() -> None:
    replies = Replies()
    assert replies.get(REQUEST, environment()) is None
    replies.add(REQUEST, (("NVTE_FUSED_ATTN_BACKEND", "0"), ("NVTE_DEBUG", None)), SHORT)
    assert replies.get(REQUEST, environment(NVTE_FUSED_ATTN_BACKEND="0")) is SHORT
    assert replies.get(REQUEST, environment(NVTE_FUSED_ATTN_BACKEND="0", OTHER="1")) is SHORT
    assert replies.get(REQUEST, environment(NVTE_FUSED_ATTN_BACKEND="1")) is None
    assert replies.get(REQUEST, environment()) is None
    assert replies.get(REQUEST, environment(NVTE_FUSED_ATTN_BACKEND="0", NVTE_DEBUG="1")) is None
    assert (
        replies.get(REQUEST.replace("90", "100"), environment(NVTE_FUSED_ATTN_BACKEND="0")) is None
    )


def test_each_value_of_a_read_keeps_its_own_reply() -> None:
    """A request asked under two values of a variable it read has a reply for each; one that
    read nothing holds whatever the environment says."""
    replies = Replies()
    replies.add(REQUEST, (("NVTE_FUSED_ATTN_BACKEND", "0"),), SHORT)
    replies.add(REQUEST, (("NVTE_FUSED_ATTN_BACKEND", "1"),), LONG)
    assert replies.get(REQUEST, environment(NVTE_FUSED_ATTN_BACKEND="1")) is LONG
    assert replies.get(REQUEST, environment(NVTE_FUSED_ATTN_BACKEND="0")) is SHORT
    plain = '{"machine": [80, 91801], "arguments": [1, 2]}'
    replies.add(plain, (), LONG)
    assert replies.get(plain, environment(NVTE_FUSED_ATTN_BACKEND="7")) is LONG


def test_the_reads_are_replayed_in_order_and_stop_at_the_first_that_differs() -> None:
    """TE's code takes another path after a variable that reads differently: the later reads
    of the kept reply are not asked."""
    replies = Replies()
    replies.add(REQUEST, (("A", "1"), ("B", "2")), SHORT)
    asked = []

    def recorded(name):
        asked.append(name)
        return None

    assert replies.get(REQUEST, recorded) is None
    assert asked == ["A"]
