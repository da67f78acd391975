"""What the harness keeps from one load or request to the next changes no answer.

TE's files are parsed and compiled once per text (`harness.compiled`), not per path: a file
edited between two loads is read anew. A returned `Version` prints as it was returned, though
its text is remembered: equal versions may print apart.
"""

from __future__ import annotations

import shutil

import pytest
from packaging.version import Version

from selector_patch.harness import LoadError, load_selector
from selector_patch.harness.selection import _text
from selector_patch.sources import resolve

#: A module of the tree every load of TE 2.20.2's selector executes whole.
HELPER = "transformer_engine/pytorch/cpp_extensions/fused_attn.py"


def test_a_helper_module_edited_after_a_load_is_read_anew(release, tmp_path) -> None:
    root = tmp_path / "TransformerEngine"
    shutil.copytree(release("2.20.2").root, root)
    source = resolve(str(root))
    load_selector(source)
    helper = root / HELPER
    helper.write_text(helper.read_text() + "\nraise RuntimeError('edited after the first load')\n")
    with pytest.raises(LoadError, match="edited after the first load"):
        load_selector(source)


def test_equal_versions_print_as_returned() -> None:
    short, long = Version("2.0"), Version("2.0.0")
    assert short == long
    assert [_text(short), _text(long), _text(short)] == ["2.0", "2.0.0", "2.0"]
