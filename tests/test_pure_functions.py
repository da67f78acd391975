"""Which module-level functions the analysis runs where the selector calls them (`pure_functions`).

Only code that can neither see nor change the caller's state qualifies; anything else stays an
unknown call. The end-to-end use, TE's own `get_qkv_format` deciding TE 2.18's THD filter, is
a VALID example of TEA006 / TEA007 (`lint_plugin.rule_examples`, run by `tests/test_rules.py`) and the
2.15 - 2.18 verdicts of `test_analysis_corpus.py`.
"""

from __future__ import annotations

import ast

import pytest

from lint_plugin.engine.pure_functions import pure_functions
from lint_plugin.rule_examples import _GET_QKV_FORMAT

PURE_NAMES = {"len", "max", "_LAYOUTS"}


def qualifying(code: str, used: tuple[str, ...] | None = None) -> list[str]:
    """The qualifying functions a selector using `used` (by default: every one) reaches."""
    module = ast.parse(code)
    if used is None:
        used = tuple(node.name for node in module.body if isinstance(node, ast.FunctionDef))
    return sorted(pure_functions(module, PURE_NAMES, {}, used))


def test_te_s_get_qkv_format_qualifies():
    assert qualifying(_GET_QKV_FORMAT) == ["get_qkv_format"]


def test_a_function_calling_a_qualifying_one_qualifies_too():
    code = _GET_QKV_FORMAT + "\ndef is_thd(layout):\n    fmt, _, _ = get_qkv_format(layout)\n"
    code += "    return fmt == 'thd'\n"
    assert qualifying(code) == ["get_qkv_format", "is_thd"]


@pytest.mark.parametrize(
    "body",
    [
        pytest.param("    global _CACHE\n    _CACHE = x\n    return x", id="global"),
        pytest.param("    x.cached = True\n    return x", id="attribute-store"),
        pytest.param("    _LAYOUTS[0] = x\n    return x", id="item-store"),
        pytest.param("    return os.getenv(x)", id="impure-callee"),
        pytest.param("    return x.append(1)", id="method-not-pure"),
        pytest.param("    while x:\n        x = x[1:]\n    return x", id="while-loop"),
        pytest.param("    return selector_local + x", id="reads-a-non-module-name"),
        pytest.param("    return (lambda y: y)(x)", id="lambda"),
        pytest.param(
            "    try:\n        return len(x)\n    except TypeError:\n        return 0", id="try"
        ),
    ],
)
def test_code_that_may_touch_other_state_does_not_qualify(body):
    code = f"def helper(x):\n{body}\n"
    assert qualifying(code) == []
    # nor does a function that calls it
    assert qualifying(code + "\ndef caller(x):\n    return helper(x)\n") == []


def test_a_rebound_or_decorated_function_does_not_qualify():
    plain = "def helper(x):\n    y = len(x)\n    return y\n"
    assert qualifying(plain) == ["helper"]
    assert qualifying(plain + "helper = None\n") == []
    assert qualifying("@functools.cache\n" + plain) == []
    assert qualifying(plain.replace("(x)", "(*x)", 1)) == []


def test_only_the_functions_the_selector_reaches_are_read():
    code = _GET_QKV_FORMAT + "\ndef is_thd(layout):\n    fmt, _, _ = get_qkv_format(layout)\n"
    code += "    return fmt == 'thd'\n"
    assert qualifying(code, used=("is_thd",)) == ["get_qkv_format", "is_thd"]
    assert qualifying(code, used=("get_qkv_format",)) == ["get_qkv_format"]
    assert qualifying(code, used=("other",)) == []
