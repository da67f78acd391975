"""Guards for TEA001 / TEA002 written into real TE 2.15+ selector text, as a fix would write them.

Tests compare the runtime patch and `verify` against selectors carrying these guards: the
reference "patched selector". Anchors exist in every release 2.15.0 - 2.20.2.
"""

from __future__ import annotations

from selector_patch.registry import get_hazard

DETERMINISM_ANCHOR = "    # use_flash_attention may have been set above\n"
HEAD_DIM_ANCHOR = (
    "    if use_flash_attention_3 and FlashAttentionUtils.v3_is_installed:\n\n        def _is_fa3"
)


def guard(flag: str, condition: str, message: str) -> str:
    body = f"        logger.debug({message!r})\n        {flag} = False\n"
    return f"    if {flag} and {condition}:\n{body}"


TEA001_GUARD = guard(
    "use_flash_attention_4",
    "deterministic and is_training and device_compute_capability in ((12, 0), (12, 1))",
    get_hazard("TEA001").message,
)
TEA002_GUARD = guard(
    "use_flash_attention_2",
    "max(head_dim_qk, head_dim_v) > 192 and attention_dropout > 0 and is_training"
    " and device_compute_capability in ((8, 6), (8, 9), (12, 0), (12, 1))",
    get_hazard("TEA002").message,
)
#: Removes FA4 on every GPU and in eval too: the sm90 / sm100 and eval controls must catch it.
OVERBROAD_TEA001_GUARD = guard(
    "use_flash_attention_4", "deterministic", get_hazard("TEA001").message
)
BOTH_GUARDS = ((DETERMINISM_ANCHOR, TEA001_GUARD), (HEAD_DIM_ANCHOR, TEA002_GUARD))


def insert(text: str, insertions) -> str:
    """`text` with each guard inserted right before its anchor."""
    for anchor, inserted in insertions:
        assert text.count(anchor) == 1, anchor
        text = text.replace(anchor, inserted + anchor)
    return text
