"""Which module-level functions the analysis runs where the selector calls them (`pure_functions`),
and how a run of one is kept for the runs that meet the same call alike (`_run_pure`).

Only code that can neither see nor change the caller's state qualifies; anything else stays an
unknown call. The end-to-end use, TE's own `get_qkv_format` deciding TE 2.18's THD filter, is
a VALID example of TEA006 / TEA007 (`lint_plugin.rule_examples`, run by `tests/test_rules.py`) and the
2.15 - 2.18 verdicts of `test_analysis_corpus.py`.
"""

from __future__ import annotations

import ast

import pytest

from lint_plugin.engine.absint import Value, const
from lint_plugin.engine.analysis import compute_capability
from lint_plugin.engine.interpreter import Facts, Interpreter, Observer
from lint_plugin.engine.program import Program
from lint_plugin.engine.pure_functions import pure_functions, typed
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


# ---------------------------------------------------------------- runs kept across runs

_SELECTOR = """
def get_attention_backend(attention_params):
    layout = attention_params.layout
    device_compute_capability = get_device_compute_capability()
    if device_compute_capability == (9, 0):
        pass
    fmt = describe(layout)
    return fmt
"""


def _runs(code: str, *facts: Facts) -> tuple[list[Value], Program, list[int]]:
    """The value each run returns, one `Program` for all, and each run's statement count."""
    module = ast.parse(code)
    function = next(n for n in module.body if n.name == "get_attention_backend")
    pure = {n.name: n for n in module.body if n.name != function.name}
    program, values, counts = Program(function), [], []
    for each in facts:
        interpreter = Interpreter(program, each._replace(pure_functions=pure))
        (state,) = interpreter.run()
        values.append(state.vars["fmt"])
        counts.append(interpreter.statements)
    return values, program, counts


def _facts(capability=(9, 0), layout="bshd", **names) -> Facts:
    return Facts(
        params={"layout": const(layout, frozenset({"layout"}))},
        calls=compute_capability(capability),
        names={name: const(value) for name, value in names.items()},
    )


def test_a_pure_call_decided_alike_runs_once_and_counts_its_statements_each_time():
    code = "def describe(layout):\n    if layout == 'thd':\n        return 'packed'\n"
    code += "    return layout.upper()\n" + _SELECTOR
    values, program, counts = _runs(code, _facts((9, 0)), _facts((12, 0)))
    assert [value.const for value in values] == ["BSHD", "BSHD"]
    assert len(program.pure_runs) == 1  # the capability is nothing `describe` can read
    alone, _, counted = _runs(code, _facts((12, 0)))  # a program of its own: nothing kept
    assert (_shown(values[1]), counts[1]) == (_shown(alone[0]), counted[0])


def _shown(value: Value) -> tuple:
    """A value with its sites as line numbers: the same in another parse of the code."""
    lines = [sorted(site.stmt.lineno for site in sites) for sites in value[3:5]]
    return (*value[:3], *lines, value.choices)


@pytest.mark.parametrize(
    "first, second",
    [
        pytest.param(_facts(layout=1), _facts(layout=True), id="1-and-True"),
        pytest.param(_facts(layout=0.0), _facts(layout=-0.0), id="0.0-and--0.0"),
        pytest.param(_facts(layout=(1, 0)), _facts(layout=(True, 0)), id="nested-1-and-True"),
    ],
)
def test_equal_arguments_of_other_types_run_apart(first, second):
    code = "def describe(layout):\n    return str(layout)\n" + _SELECTOR
    values, program, _ = _runs(code, first, second)
    assert values[0].const != values[1].const
    assert len(program.pure_runs) == 2


def test_a_module_name_the_facts_hold_keeps_runs_apart():
    code = "def describe(layout):\n    return layout + _SUFFIX\n" + _SELECTOR
    values, program, _ = _runs(code, _facts(_SUFFIX="_a"), _facts(_SUFFIX="_b"))
    assert [value.const for value in values] == ["bshd_a", "bshd_b"]


def test_an_argument_of_a_type_without_a_typed_key_is_not_kept():
    code = "def describe(layout):\n    return len(layout)\n" + _SELECTOR
    values, program, _ = _runs(code, _facts(layout=["b", "s"]), _facts(layout=["b", "s"]))
    assert [value.const for value in values] == [2, 2]
    assert program.pure_runs == {}
    with pytest.raises(TypeError):
        typed(["b", "s"])


def test_the_observer_is_told_of_the_selector_s_ifs_only():
    code = "def describe(layout):\n    if layout:\n        return 'x'\n    return 'y'\n"

    class Ifs(Observer):
        def __init__(self) -> None:
            self.lines: list[int] = []

        def on_if(self, interpreter, node, test, state) -> None:
            self.lines.append(node.lineno)

    module = ast.parse(code + _SELECTOR)
    function = module.body[1]
    observer = Ifs()
    facts = _facts()._replace(pure_functions={"describe": module.body[0]})
    Interpreter(Program(function), facts, observer).run()
    assert observer.lines == [function.body[2].lineno]  # `if device_compute_capability ...`
