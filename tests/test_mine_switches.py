"""flash-attn-4's environment switches: helpers read from the kernel's source, unset through TE.

A switch is found by reading its body (`os.getenv(NAME, default)`, `os.environ.get`, a module
global holding one), never by a list; through TE's calls it holds its unset value, which
decides refusals such as 4.0.0b36's hd256 2CTA raise. The last test checks the premise on the
real releases: TE's callers of the kernel set none of the variables the switches read.
"""

from __future__ import annotations

import ast
import re
import textwrap

import pytest

from lint_plugin.mine.cute.cases import cases
from lint_plugin.mine.cute.extract import refusals
from lint_plugin.mine.cute.kernel import from_release
from lint_plugin.mine.cute.switches import switches
from lint_plugin.mine.findings import UNMAPPED, UNREACHABLE
from lint_plugin.mine.te_calls import CALLER_FILES, KernelCall
from selector_patch.sources import read_text

UTILS = '''
import os

_disabled: bool = os.environ.get("FA_DISABLE_2CTA", "0") == "1"


def _get_generic() -> bool:
    """A switch: its value with the variable unset is False."""
    return os.getenv("FA_GENERIC", "0") == "1"


def _get_disabled() -> bool:
    return _disabled


def _get_tile():
    value = os.getenv("FA_TILE")
    if value is None or value == "":
        return None
    return int(value)


def _takes(flag):
    return os.getenv("FA_X", "0") == "1" and flag


def _device():
    return torch.cuda.get_device_capability()
'''


def test_switches_are_read_from_the_helpers_bodies():
    """Helpers without parameters whose value the unset environment decides; a module global
    holding an environment read (`_disabled`) counts where a helper returns it."""
    found = switches([ast.parse(UTILS)])
    assert {name: (s.value, s.variables) for name, s in found.items()} == {
        "_get_generic": (False, ("FA_GENERIC",)),
        "_get_disabled": (False, ("FA_DISABLE_2CTA",)),
        "_get_tile": (None, ("FA_TILE",)),
    }


def test_a_helper_two_modules_define_differently_is_no_switch():
    other = ast.parse(
        'import os\ndef _get_generic():\n    return os.getenv("FA_GENERIC", "1") == "1"'
    )
    assert "_get_generic" not in switches([ast.parse(UTILS), other])


KERNEL = """
def flash_attn_func(q, k, v, block_sparse_tensors=None):
    return _flash_attn_bwd(q, k, v, block_sparse_tensors=block_sparse_tensors)


def _flash_attn_bwd(q, k, v, block_sparse_tensors=None):
    arch = _get_device_arch()
    generic = head_dim == 256 and utils._get_generic()
    needs = "hd256" if generic else ("sparse" if block_sparse_tensors is not None else None)
    if arch // 10 == 10:
        if needs is not None:
            raise ValueError(f"{needs} requires 2CTA")
"""

TE_CALL = KernelCall("FA4", "flash_attn_func", "backends.py", 21, {}, (), False)


def test_a_switch_unset_through_te_decides_the_refusal():
    helpers = switches([ast.parse(UTILS)])
    (refusal,) = refusals(
        textwrap.dedent(KERNEL), "flash_attn/cute/interface.py", [TE_CALL], helpers
    )
    (case,) = cases(refusal, "4.0.0b36")
    assert case.standing == UNREACHABLE
    assert "`block_sparse_tensors` is None (TE never passes it)" in case.unmapped
    assert "`_get_generic()` is False (FA_GENERIC unset" in case.unmapped
    # Without the switch the hd256 path stays open: the table cannot decide `generic`.
    (refusal,) = refusals(textwrap.dedent(KERNEL), "flash_attn/cute/interface.py", [TE_CALL])
    (case,) = cases(refusal, "4.0.0b36")
    assert case.standing == UNMAPPED


#: Writes to the process environment in TE's source.
ENV_WRITE = re.compile(r"os\.environ\[|os\.putenv|environ\.setdefault|environ\.update")


@pytest.fixture(scope="module")
def variables() -> set[str]:
    """The variables a 4.0.0b24 or 4.0.0b36 switch reads: the same for every release of TE
    asked, and read once (it parses every file of both kernels, seconds)."""
    return {
        variable
        for version in ("4.0.0b24", "4.0.0b36")
        for path in from_release(version).files()
        for switch in switches([ast.parse(read_text(path))]).values()
        for variable in switch.variables
    }


@pytest.mark.parametrize("te", ["2.15.0", "2.18.0", "2.19.0", "2.20.2"])
def test_te_sets_none_of_the_variables_the_switches_read(te, variables, release):
    """TE's callers of flash-attn-4 pass arguments only: no write to `os.environ` names a
    variable a 4.0.0b36 or 4.0.0b24 switch reads."""
    assert "FLASH_ATTENTION_HD256_GENERIC_BWD" in variables
    directory = release(te).path.parent
    for name in CALLER_FILES:
        path = directory / name
        if not path.is_file():
            continue
        for line in read_text(path).splitlines():
            if ENV_WRITE.search(line):
                assert not any(variable in line for variable in variables), (path, line)
