"""Each expression node of a selector compiled, once, into the function that evaluates it.

A run evaluates the same few hundred conditions of TE's selector on every witness, and Python
charges about a thousand machine instructions for each function call: a tree walker that looks up
a handler by node type, then the handler, then one call per operand, spends most of a run on
dispatch. Here every node becomes an evaluator, `evaluator(interpreter, state) -> Value`, built
the first time a run meets the node and kept on the `Program` for every later run; what depends
only on the source (a dotted name, a literal display, which operator folds a comparison, whether a
call may run a local helper) is worked out then, and an evaluator calls its operands' evaluators
directly. What depends on the run (the state, the facts, the observer's overrides and trace) is
read when it evaluates.

An observer's "what if" (`Interpreter.overrides`) applies to comparisons, the nodes it forces;
`Interpreter.trace` records them. A name's evaluator serves every node of that name, as do a
dotted name's and a literal's.
"""

from __future__ import annotations

import ast
import contextlib
import operator
from typing import TYPE_CHECKING, Callable

from lint_plugin.engine.absint import (
    EMPTY,
    UNKNOWN,
    State,
    Value,
    const,
    join,
    new_value,
    unknown,
    with_deps,
    with_truth,
)
from lint_plugin.engine.interpret.folding import (
    BINARY,
    PURE_BUILTINS,
    UNARY,
    apply,
    compare_values,
)
from lint_plugin.engine.interpret.frames import RAISES, LocalFunction, Unreachable
from lint_plugin.engine.program import Program, dotted_name
from lint_plugin.engine.pure_functions import PURE_METHODS
from lint_plugin.engine.recipes import METHODS as RECIPE_METHODS
from lint_plugin.engine.recipes import attribute, call

if TYPE_CHECKING:
    from lint_plugin.engine.interpreter import Interpreter

Evaluator = Callable[["Interpreter", State], Value]


def evaluator(program: Program, node: ast.AST) -> Evaluator:
    """The evaluator of `node`, compiled on first use and kept on `program`."""
    compiled = program.evaluators.get(node)
    if compiled is None:
        factory = FACTORIES.get(type(node), _unmodelled)
        compiled = program.evaluators[node] = factory(program, node)
    return compiled


def opaque_read(name: frozenset[str], value: Value) -> Value:
    """A backend flag read where `Facts.opaque` names it: its truth unknown, and a dependency
    on the flag itself (`name`, as a set of one), so that conditions can be told apart by which
    backends' flags they read."""
    return new_value((UNKNOWN, None, value.deps | name, value.enablers, value.disablers, None))


def _constant(program: Program, node: ast.Constant) -> Evaluator:
    """The evaluator of every literal equal to this one (of its type), made on the first."""
    key = (type(node.value), node.value)  # literals are hashable; 1 and True stay apart
    shared = program.name_evaluators.get(key)
    if shared is None:
        value = const(node.value)
        shared = program.name_evaluators[key] = lambda interpreter, state: value
    return shared


def _name(program: Program, node: ast.Name) -> Evaluator:
    """The evaluator of every node naming `node.id`, made on the first."""
    name = node.id
    shared = program.name_evaluators.get(name)
    if shared is None:
        shared = program.name_evaluators[name] = _named(name)
    return shared


def _named(name: str) -> Evaluator:
    read = frozenset((name,))

    def evaluate(interpreter: Interpreter, state: State) -> Value:
        value = state.vars.get(name)
        if value is None:
            value = interpreter.facts.names.get(name)
            if value is None:
                return unknown()
        if name in interpreter.facts.opaque:
            return opaque_read(read, value)
        return value

    return evaluate


def _attribute(program: Program, node: ast.Attribute) -> Evaluator:
    """`a.b.c`: the state's binding of the dotted name, else an `AttentionParams` field read off
    the selector's argument, else a module name the facts know, else an FP8 recipe's option
    (`recipes.attribute`), else unknown. One evaluator serves every node of a dotted name."""
    value = node.value
    dotted = f"{value.id}.{node.attr}" if type(value) is ast.Name else dotted_name(node)
    if dotted is None:
        base, field = evaluator(program, value), node.attr
        return lambda interpreter, state: _attribute_of(base(interpreter, state), field)
    shared = program.name_evaluators.get(dotted)
    if shared is None:
        shared = program.name_evaluators[dotted] = _dotted(program, node, dotted)
    return shared


def _dotted(program: Program, node: ast.Attribute, dotted: str) -> Evaluator:
    base = evaluator(program, node.value)
    parameter = node.value.id if _reads_parameter(program, node) else None
    field, field_deps, read = node.attr, frozenset((node.attr,)), frozenset((dotted,))

    def evaluate(interpreter: Interpreter, state: State) -> Value:
        value = state.vars.get(dotted)
        if value is not None:
            if dotted in interpreter.facts.opaque:
                return opaque_read(read, value)
            return value
        if parameter is not None and parameter not in state.vars:
            value = interpreter.facts.params.get(field)
            return value if value is not None else unknown(field_deps)
        value = interpreter.facts.names.get(dotted)
        if value is not None:
            return value
        return _attribute_of(base(interpreter, state), field)

    return evaluate


def _attribute_of(held: Value, field: str) -> Value:
    """`held.field`: folded on what a witness binds an FP8 recipe to, else unknown."""
    if held.const is UNKNOWN and held.choices is None:
        return unknown(held.deps)
    return apply(lambda obj: attribute(obj, field), (held,), held.deps)


def _reads_parameter(program: Program, node: ast.Attribute) -> bool:
    return isinstance(node.value, ast.Name) and node.value.id == program.parameter


def _subscript(program: Program, node: ast.Subscript) -> Evaluator:
    base, index = evaluator(program, node.value), evaluator(program, node.slice)

    def evaluate(interpreter: Interpreter, state: State) -> Value:
        held, key = base(interpreter, state), index(interpreter, state)
        return apply(operator.getitem, (held, key), held.deps | key.deps)

    return evaluate


def _literal_items(node: ast.Tuple | ast.List | ast.Set) -> list | None:
    """The items of a display made of literals alone (`(8, 0)`), else None."""
    if all(isinstance(element, ast.Constant) for element in node.elts):
        return [element.value for element in node.elts]
    return None


def _display(program: Program, node: ast.Tuple | ast.List | ast.Set):
    """What evaluates a display's items: `(values, deps)`, values None unless every item is
    known and none is starred."""
    items = [evaluator(program, element) for element in node.elts]
    starred = any(isinstance(element, ast.Starred) for element in node.elts)

    def evaluate(interpreter: Interpreter, state: State) -> tuple[list | None, frozenset[str]]:
        values, deps, known = [], EMPTY, not starred
        for item in items:
            value = item(interpreter, state)
            if value.deps:
                deps = deps | value.deps
            if value.const is UNKNOWN:
                known = False
            values.append(value.const)
        return (values if known else None), deps

    return evaluate


def _sequence(program: Program, node: ast.Tuple | ast.List) -> Evaluator:
    literal = _literal_items(node)
    if literal is not None and isinstance(node, ast.Tuple):
        value = const(tuple(literal))  # TE's architectures, `(8, 0)`: built once
        return lambda interpreter, state: value
    display = _display(program, node)
    build = tuple if isinstance(node, ast.Tuple) else list
    nonempty = any(not isinstance(element, ast.Starred) for element in node.elts)

    def evaluate(interpreter: Interpreter, state: State) -> Value:
        values, deps = display(interpreter, state)
        if values is not None:
            return const(build(values), deps)
        return unknown(deps, truth=True if nonempty else None)

    return evaluate


def _set(program: Program, node: ast.Set) -> Evaluator:
    """A set display of known, hashable items is known (as a frozenset: same membership)."""
    display, otherwise = _display(program, node), _unmodelled(program, node)

    def evaluate(interpreter: Interpreter, state: State) -> Value:
        values, deps = display(interpreter, state)
        if values is not None:
            with contextlib.suppress(TypeError):
                return const(frozenset(values), deps)
        return otherwise(interpreter, state)

    return evaluate


def _comprehension(program: Program, node: ast.GeneratorExp | ast.ListComp | ast.SetComp):
    return lambda interpreter, state: interpreter._comprehension(node, state)


def _namedexpr(program: Program, node: ast.NamedExpr) -> Evaluator:
    value_of, target = evaluator(program, node.value), node.target.id

    def evaluate(interpreter: Interpreter, state: State) -> Value:
        value = value_of(interpreter, state)
        interpreter.store(target, value, state)
        return value

    return evaluate


def _boolop(program: Program, node: ast.BoolOp) -> Evaluator:
    stops_on = not isinstance(node.op, ast.And)  # `and` stops at falsy, `or` at truthy
    operands = [(operand, evaluator(program, operand)) for operand in node.values]
    *leading, (last_operand, last) = operands

    def evaluate(interpreter: Interpreter, state: State) -> Value:
        recorded = interpreter.operands if node is interpreter.recorded else None
        result, deps = None, EMPTY
        for operand, evaluate_operand in leading:
            value = evaluate_operand(interpreter, state)
            if recorded is not None:
                recorded[operand] = value
            deps = deps | value.deps
            if value.truth is stops_on:
                result = value if result is None else join(result, value)
                return with_deps(result, deps)
            if value.truth is None:
                part = with_truth(value, stops_on)
                result = part if result is None else join(result, part)
        value = last(interpreter, state)
        if recorded is not None:
            recorded[last_operand] = value
        deps = deps | value.deps
        result = value if result is None else join(result, value)
        return with_deps(result, deps)

    return evaluate


def _unaryop(program: Program, node: ast.UnaryOp) -> Evaluator:
    operand_of = evaluator(program, node.operand)
    if isinstance(node.op, ast.Not):

        def negate(interpreter: Interpreter, state: State) -> Value:
            operand = operand_of(interpreter, state)
            if operand.truth is None:
                return unknown(operand.deps)
            return const(not operand.truth, operand.deps)

        return negate
    function = UNARY[type(node.op)]

    def evaluate(interpreter: Interpreter, state: State) -> Value:
        operand = operand_of(interpreter, state)
        return apply(function, (operand,), operand.deps)

    return evaluate


def arithmetic(op: type) -> Callable[[Value, Value], Value]:
    """`left op right` folded (`AugAssign` shares it)."""
    function = BINARY.get(op)
    if function is None:
        return lambda left, right: unknown(left.deps | right.deps)
    return lambda left, right: apply(function, (left, right), left.deps | right.deps)


def _binop(program: Program, node: ast.BinOp) -> Evaluator:
    left, right = evaluator(program, node.left), evaluator(program, node.right)
    fold = arithmetic(type(node.op))
    return lambda interpreter, state: fold(left(interpreter, state), right(interpreter, state))


def _compare(program: Program, node: ast.Compare) -> Evaluator:
    first = evaluator(program, node.left)
    steps = [(op, evaluator(program, right)) for op, right in zip(node.ops, node.comparators)]

    def evaluate(interpreter: Interpreter, state: State) -> Value:
        if interpreter.overrides and node in interpreter.overrides:
            return interpreter.overrides[node]
        left = first(interpreter, state)
        deps = left.deps
        outcome: bool | None = True
        for op, right_of in steps:
            right = right_of(interpreter, state)
            deps = deps | right.deps
            step = compare_values(op, left, right)
            if step is False:
                outcome = False
                break
            if step is None:
                outcome = None
            left = right
        value = unknown(deps) if outcome is None else const(outcome, deps)
        if interpreter.trace is not None:
            interpreter.trace.append((node, value))
        return value

    return evaluate


def _ifexp(program: Program, node: ast.IfExp) -> Evaluator:
    test_of = evaluator(program, node.test)
    body, orelse = evaluator(program, node.body), evaluator(program, node.orelse)

    def evaluate(interpreter: Interpreter, state: State) -> Value:
        test = test_of(interpreter, state)
        if test.truth is True:
            value = body(interpreter, state)
        elif test.truth is False:
            value = orelse(interpreter, state)
        else:
            value = join(body(interpreter, state), orelse(interpreter, state))
        return with_deps(value, test.deps)

    return evaluate


def _call(program: Program, node: ast.Call) -> Evaluator:
    """A call: a local helper inlined, a fact's answer, a module predicate expanded, a pure
    module function run, a pure method or builtin folded; otherwise unknown (its arguments
    evaluated where they may run a local helper)."""
    func = node.func
    local = func.id if isinstance(func, ast.Name) else None
    name = local if local is not None else getattr(func, "attr", None)
    runs_helper = program.calls_helper(node)
    #: Evaluated for their effects alone, where the call is otherwise unknown.
    arguments = (
        [
            evaluator(program, argument)
            for argument in (*node.args, *(k.value for k in node.keywords))
        ]
        if runs_helper
        else []
    )
    method = (
        isinstance(func, ast.Attribute)
        and func.attr in PURE_METHODS
        and not node.keywords
        and not runs_helper
    )
    folds = local is not None and not node.keywords
    #: `fp8_recipe.float8_current_scaling()`, `fp8_meta.get(...)`: folded on what a witness
    #: binds the recipe state to (`recipes.call`).
    recipe_call = (
        isinstance(func, ast.Attribute)
        and func.attr in RECIPE_METHODS
        and not node.keywords
        and not runs_helper
        and not any(isinstance(argument, ast.Starred) for argument in node.args)
    )
    if recipe_call:
        receiver = evaluator(program, func.value)
        operands = [evaluator(program, argument) for argument in node.args]

    def evaluate(interpreter: Interpreter, state: State) -> Value:
        if local is not None:
            bound = state.vars.get(local)
            if bound is not None and isinstance(bound.const, LocalFunction):
                return interpreter._inline(bound.const.node, node, state)
        facts = interpreter.facts
        fact = facts.calls.get(name) if name is not None else None
        if fact is RAISES:
            raise Unreachable
        if fact is not None:
            return fact
        expanded = interpreter._expanded(node, state)
        if expanded is not None:
            return interpreter.eval(expanded, state)
        if local is not None and local not in state.vars:
            function = facts.pure_functions.get(local)
            if function is not None:
                return interpreter._run_pure(function, node, state)
        if method:
            return interpreter._str_method(func, node, state)
        if recipe_call:
            held = receiver(interpreter, state)
            if held.const is not UNKNOWN or held.choices is not None:
                values = [held, *(operand(interpreter, state) for operand in operands)]
                deps = frozenset().union(*(value.deps for value in values))
                return apply(lambda obj, *args: call(obj, func.attr, *args), values, deps)
        if (
            folds
            and (local in PURE_BUILTINS or local in facts.functions)
            and local not in state.vars
        ):
            return interpreter._builtin(local, node, state)
        if runs_helper:
            for argument in arguments:
                argument(interpreter, state)
        return unknown(interpreter._deps_of(node, state))

    return evaluate


def _unmodelled(program: Program, node: ast.AST) -> Evaluator:
    return lambda interpreter, state: interpreter._unmodelled(node, state)


#: How each kind of expression compiles (`evaluator`); any other is unmodelled.
FACTORIES: dict[type, Callable[[Program, ast.AST], Evaluator]] = {
    ast.Constant: _constant,
    ast.Name: _name,
    ast.Attribute: _attribute,
    ast.Subscript: _subscript,
    ast.Call: _call,
    ast.BoolOp: _boolop,
    ast.UnaryOp: _unaryop,
    ast.BinOp: _binop,
    ast.Compare: _compare,
    ast.IfExp: _ifexp,
    ast.Tuple: _sequence,
    ast.List: _sequence,
    ast.Set: _set,
    ast.GeneratorExp: _comprehension,
    ast.ListComp: _comprehension,
    ast.SetComp: _comprehension,
    ast.NamedExpr: _namedexpr,
}
