"""What libcst's own runner writes: the codemod on libcst's tree of the whole module.

`python -m codemods.apply` has libcst parse only the runs of statements around its anchors
(`codemods.insert._segments`); the tests hold it to this, byte for byte.
"""

from __future__ import annotations

from typing import Sequence

import libcst as cst
from libcst.codemod import CodemodContext, SkipFile

from codemods.command import InsertSelectorGuards
from selector_patch.config import Config
from selector_patch.registry import HAZARDS, Hazard


def whole_tree(text: str, hazards: Sequence[Hazard] = HAZARDS) -> str:
    """`text` after `InsertSelectorGuards` on its whole tree (unchanged where it skips the
    file: every applicable guard is there already)."""
    command = InsertSelectorGuards(CodemodContext(), config=Config(hazards=tuple(hazards)))
    try:
        return command.transform_module(cst.parse_module(text)).code
    except SkipFile:
        return text
