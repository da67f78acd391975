"""How each kind of expression evaluates to a `Value`: names read from the state or the facts,
operators and pure builtins folded, comprehensions over known sequences run item by item, and
local helpers inlined at the call with their `nonlocal` writes landing in the caller."""

from __future__ import annotations

import ast
import contextlib
import operator
from typing import Callable, Mapping

from lint_plugin.engine.absint import (
    EMPTY,
    EMPTY_MAPPING,
    MAX_CHOICES,
    UNKNOWN,
    State,
    Value,
    const,
    join,
    join_all,
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
    join_all_values,
    known_items,
)
from lint_plugin.engine.interpret.frames import RAISES, Frame, LocalFunction, Unreachable
from lint_plugin.engine.program import dotted_name
from lint_plugin.engine.pure_functions import PURE_METHODS

#: Nested helper calls inlined before a call's effect is over-approximated instead.
MAX_INLINE_DEPTH = 8


class Expressions:
    """The expression handlers of `Interpreter` (`EXPRESSIONS` maps each node type to one)."""

    def _deps_of(self, node: ast.AST, state: State) -> frozenset[str]:
        """Inputs an expression reads, without evaluating it."""
        names, fields = self.program.reads(node)
        deps = fields
        for name in names:
            value = state.vars.get(name)
            if value is not None and value.deps:
                deps = deps | value.deps
        return deps

    def _unmodelled(self, node: ast.AST, state: State) -> Value:
        """f-strings, lambdas, dicts, and comprehensions or set displays over what is not known:
        unknown, but not input-free."""
        if self.program.calls_helper(node):
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.expr):
                    self.eval(child, state)
        truth = None
        if isinstance(node, ast.Dict):  # `{**other}` may be empty
            truth = True if any(key is not None for key in node.keys) else None
            truth = False if not node.keys else truth
        elif isinstance(node, ast.Set):  # never empty unless it is all `*other`
            truth = True if not all(isinstance(e, ast.Starred) for e in node.elts) else None
        return unknown(self._deps_of(node, state), truth)

    def _constant(self, node: ast.Constant, state: State) -> Value:
        value = self._constants.get(node)
        if value is None:
            value = self._constants[node] = const(node.value)
        return value

    def _read(self, name: str, value: Value) -> Value:
        if name in self.facts.opaque:
            # Unknown truth, and a dependency on the flag itself: conditions can be told
            # apart by which backends' flags they read.
            return value._replace(const=UNKNOWN, truth=None, deps=value.deps | {name}, choices=None)
        return value

    def _name(self, node: ast.Name, state: State) -> Value:
        value = state.vars.get(node.id)
        if value is None:
            value = self.facts.names.get(node.id)
            if value is None:
                return unknown()
        return self._read(node.id, value)

    def _attribute(self, node: ast.Attribute, state: State) -> Value:
        dotted = dotted_name(node)
        if dotted is not None:
            value = state.vars.get(dotted)
            if value is not None:
                return self._read(dotted, value)
            base = node.value
            if (
                isinstance(base, ast.Name)
                and base.id == self.program.parameter
                and base.id not in state.vars
            ):
                value = self.facts.params.get(node.attr)
                return value if value is not None else unknown(frozenset((node.attr,)))
            value = self.facts.names.get(dotted)
            if value is not None:
                return value
        return unknown(self.eval(node.value, state).deps)

    def _subscript(self, node: ast.Subscript, state: State) -> Value:
        base = self.eval(node.value, state)
        index = self.eval(node.slice, state)
        return apply(operator.getitem, (base, index), base.deps | index.deps)

    def _set(self, node: ast.Set, state: State) -> Value:
        """A set display of known, hashable items is known (as a frozenset: same membership)."""
        values, deps = self._display(node, state)
        if values is not None:
            with contextlib.suppress(TypeError):
                return const(frozenset(values), deps)
        return self._unmodelled(node, state)

    def _display(self, node: ast.Set | ast.Tuple | ast.List, state: State):
        """The items' values of a display (None unless all are known and none is starred),
        and what they depend on."""
        items = [self.eval(element, state) for element in node.elts]
        deps = EMPTY
        for item in items:
            deps = deps | item.deps
        if all(item.known for item in items) and not any(
            isinstance(e, ast.Starred) for e in node.elts
        ):
            return [item.const for item in items], deps
        return None, deps

    def _comprehension(self, node: ast.GeneratorExp | ast.ListComp | ast.SetComp, state: State):
        """A comprehension over known, short sequences, evaluated item by item in a scope of its
        own (`any(cc == arch for arch in SM12X)`); otherwise unknown."""
        results: list[Value] = []
        if self.program.calls_helper(node) or not self._generate(
            node, node.generators, state.copy(), results
        ):
            return self._unmodelled(node, state)
        deps = EMPTY
        for result in results:
            deps = deps | result.deps
        if not all(result.known for result in results):
            return unknown(deps)
        values = [result.const for result in results]
        kind = {ast.GeneratorExp: tuple, ast.ListComp: list, ast.SetComp: frozenset}[type(node)]
        try:
            return const(kind(values), deps)
        except TypeError:  # unhashable items of a set comprehension
            return unknown(deps)

    def _generate(
        self,
        node: ast.GeneratorExp | ast.ListComp | ast.SetComp,
        generators: list[ast.comprehension],
        scope: State,
        results: list[Value],
    ) -> bool:
        """Append the comprehension's element for every item `generators` yield in `scope`;
        False where an iterable or a test is unknown, or there are too many.

        A method, not a closure calling itself: that closure would be a reference cycle holding
        the interpreter, and every run's states with it, until the cyclic collector's next pass.
        """
        if not generators:
            results.append(self.eval(node.elt, scope))
            return len(results) <= MAX_CHOICES
        first, rest = generators[0], generators[1:]
        items = known_items(self.eval(first.iter, scope))
        if items is None or first.is_async:
            return False
        for item in items:
            inner = scope.copy()
            self.assign(first.target, const(item), inner)
            tests = [self.eval(test, inner).truth for test in first.ifs]
            if None in tests:
                return False
            if all(tests) and not self._generate(node, rest, inner, results):
                return False
        return True

    def _sequence(self, node: ast.Tuple | ast.List, state: State) -> Value:
        values, deps = self._display(node, state)
        if values is not None:
            return const(tuple(values) if isinstance(node, ast.Tuple) else values, deps)
        nonempty = any(not isinstance(element, ast.Starred) for element in node.elts)
        return unknown(deps, truth=True if nonempty else None)

    def _namedexpr(self, node: ast.NamedExpr, state: State) -> Value:
        value = self.eval(node.value, state)
        self.store(node.target.id, value, state)
        return value

    def _boolop(self, node: ast.BoolOp, state: State) -> Value:
        stops_on = not isinstance(node.op, ast.And)  # `and` stops at falsy, `or` at truthy
        result = None
        deps = EMPTY
        last = len(node.values) - 1
        for index, operand in enumerate(node.values):
            value = self.eval(operand, state)
            if node is self.recorded:
                self.operands[operand] = value
            deps = deps | value.deps
            if index == last or value.truth is stops_on:
                result = value if result is None else join(result, value)
                break
            if value.truth is None:
                part = with_truth(value, stops_on)
                result = part if result is None else join(result, part)
        return with_deps(result, deps)

    def _test_operands(self, test: ast.expr, state: State) -> tuple[Value, Mapping[ast.AST, Value]]:
        """An `if` test's value, and for an `and` / `or` test (under any `not`) that runs no
        helper, what its operands evaluated to in `state`: refining a branch asks for their
        truth first, and without side effects they evaluate alike until the state changes
        (an undecided `and` / `or` evaluates every operand).
        """
        core = test
        while isinstance(core, ast.UnaryOp) and isinstance(core.op, ast.Not):
            core = core.operand
        if not isinstance(core, ast.BoolOp) or self.program.calls_helper(test):
            return self.eval(test, state), EMPTY_MAPPING
        self.recorded, self.operands = core, {}
        try:
            return self.eval(test, state), self.operands
        finally:
            self.recorded = self.operands = None

    def _unaryop(self, node: ast.UnaryOp, state: State) -> Value:
        operand = self.eval(node.operand, state)
        if isinstance(node.op, ast.Not):
            if operand.truth is None:
                return unknown(operand.deps)
            return const(not operand.truth, operand.deps)
        return apply(UNARY[type(node.op)], (operand,), operand.deps)

    def _arith(self, op: type, left: Value, right: Value) -> Value:
        deps = left.deps | right.deps
        if op not in BINARY:
            return unknown(deps)
        return apply(BINARY[op], (left, right), deps)

    def _binop(self, node: ast.BinOp, state: State) -> Value:
        return self._arith(type(node.op), self.eval(node.left, state), self.eval(node.right, state))

    def _compare(self, node: ast.Compare, state: State) -> Value:
        left = self.eval(node.left, state)
        deps = left.deps
        outcome: bool | None = True
        for op, comparator in zip(node.ops, node.comparators):
            right = self.eval(comparator, state)
            deps = deps | right.deps
            step = compare_values(op, left, right)
            if step is False:
                outcome = False
                break
            if step is None:
                outcome = None
            left = right
        value = unknown(deps) if outcome is None else const(outcome, deps)
        if self.trace is not None:
            self.trace.append((node, value))
        return value

    def _ifexp(self, node: ast.IfExp, state: State) -> Value:
        test = self.eval(node.test, state)
        if test.truth is True:
            value = self.eval(node.body, state)
        elif test.truth is False:
            value = self.eval(node.orelse, state)
        else:
            value = join(self.eval(node.body, state), self.eval(node.orelse, state))
        return with_deps(value, test.deps)

    def _call(self, node: ast.Call, state: State) -> Value:
        func = node.func
        if isinstance(func, ast.Name):
            bound = state.vars.get(func.id)
            if bound is not None and isinstance(bound.const, LocalFunction):
                return self._inline(bound.const.node, node, state)
            name = func.id
        elif isinstance(func, ast.Attribute):
            name = func.attr
        else:
            name = None
        fact = self.facts.calls.get(name) if name is not None else None
        if fact is RAISES:
            raise Unreachable
        if fact is not None:
            return fact
        expanded = self._expanded(node, state)
        if expanded is not None:
            return self.eval(expanded, state)
        if isinstance(func, ast.Name) and func.id not in state.vars:
            function = self.facts.pure_functions.get(func.id)
            if function is not None:
                return self._run_pure(function, node, state)
        if (
            isinstance(func, ast.Attribute)
            and func.attr in PURE_METHODS
            and not node.keywords
            and not self.program.calls_helper(node)
        ):
            return self._str_method(func, node, state)
        if (
            isinstance(func, ast.Name)
            and (func.id in PURE_BUILTINS or func.id in self.facts.functions)
            and func.id not in state.vars
            and not node.keywords
        ):
            return self._builtin(func.id, node, state)
        if self.program.calls_helper(node):
            for argument in (*node.args, *(k.value for k in node.keywords)):
                self.eval(argument, state)
        return unknown(self._deps_of(node, state))

    def _builtin(self, name: str, node: ast.Call, state: State) -> Value:
        arguments = [
            self.eval(a.value if isinstance(a, ast.Starred) else a, state) for a in node.args
        ]
        deps = EMPTY
        for argument in arguments:
            deps = deps | argument.deps
        starred = any(isinstance(a, ast.Starred) for a in node.args)
        if name == "bool" and len(arguments) == 1 and not starred:
            truth = arguments[0].truth
            return unknown(deps) if truth is None else const(truth, deps)
        if starred:
            return unknown(deps)
        return apply(self.facts.functions.get(name) or PURE_BUILTINS[name], arguments, deps)

    def _str_method(self, func: ast.Attribute, node: ast.Call, state: State) -> Value:
        """`layout.split("_")` folded where the receiver is a known string (or a choice of
        them); any other receiver, or a starred argument, is unknown."""
        operands = [self.eval(func.value, state)]
        operands += [self.eval(argument, state) for argument in node.args]
        deps = EMPTY
        for operand in operands:
            deps = deps | operand.deps
        if any(isinstance(argument, ast.Starred) for argument in node.args):
            return unknown(deps)
        return apply(getattr(str, func.attr), operands, deps)

    def _run_pure(self, function: ast.FunctionDef, call: ast.Call, state: State) -> Value:
        """Run a module-level pure function (`pure_functions`) in a scope of its own: its
        parameters bound to the call's arguments or its defaults, module names from the facts;
        the caller's state is left as it was. Nested too deep, the result is unknown."""
        arguments = [self.eval(a, state) for a in call.args]
        keywords = {k.arg: self.eval(k.value, state) for k in call.keywords}
        deps = EMPTY
        for value in (*arguments, *keywords.values()):
            deps = deps | value.deps
        caller, caller_stmt = self.frame, self.stmt
        if (
            caller.depth >= MAX_INLINE_DEPTH
            or None in keywords
            or any(isinstance(a, ast.Starred) for a in call.args)
        ):
            return unknown(deps)
        scope = State({}, state.path)
        for param, value in self._bound_parameters(function.args, arguments, keywords, scope):
            self.store(param, value, scope)
        frame = Frame([], caller.depth + 1)
        relevant, trace, self.relevant, self.trace = self.relevant, self.trace, None, None
        try:
            end = self.block(function.body, scope, frame)
        finally:
            self.stmt, self.frame, self.relevant, self.trace = caller_stmt, caller, relevant, trace
        results = [value for value, _ in frame.returns]
        if end is not None:
            results.append(const(None))
        if not results:
            raise Unreachable
        return with_deps(join_all_values(results), deps)

    def _bound_parameters(self, arguments: ast.arguments, positional, keywords, scope: State):
        """Each parameter and its value at a call: the positional argument, the keyword, the
        default (evaluated in the function's scope), or else unknown."""
        params = [*arguments.posonlyargs, *arguments.args]
        defaults = dict(zip(params[len(params) - len(arguments.defaults) :], arguments.defaults))
        defaults.update(
            (a, d) for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults) if d is not None
        )
        for index, param in enumerate((*params, *arguments.kwonlyargs)):
            if index < len(params) and index < len(positional):
                yield param.arg, positional[index]
            elif param.arg in keywords:
                yield param.arg, keywords[param.arg]
            elif param in defaults:
                yield param.arg, self.eval(defaults[param], scope)
            else:
                yield param.arg, unknown()

    def _inline(self, function: ast.FunctionDef, call: ast.Call, state: State) -> Value:
        """Run a local helper on the caller's state: closures read it, `nonlocal` writes land."""
        outcomes = self._inline_outcomes(function, call, state)
        if outcomes is None:
            return unknown()
        after = join_all(returned for _, returned in outcomes)
        state.vars, state.path = after.vars, after.path
        return join_all_values(value for value, _ in outcomes)

    def _inline_outcomes(
        self, function: ast.FunctionDef, call: ast.Call, state: State
    ) -> list[tuple[Value, State]] | None:
        """Each way a local helper can return, with the caller's state there (the helper's own
        names put back); None when it is nested too deep to follow (its writes forgotten)."""
        helper = self.program.helper(function)
        arguments = [self.eval(a, state) for a in call.args]
        keywords = {k.arg: self.eval(k.value, state) for k in call.keywords}
        caller, caller_stmt, path = self.frame, self.stmt, state.path
        if caller.depth >= MAX_INLINE_DEPTH:
            for name in helper.nonlocals:
                self.store(name, unknown(), state)
            return None
        saved = {name: state.vars.get(name) for name in helper.locals}
        for index, param in enumerate(helper.params):
            if index < len(arguments):
                value = arguments[index]
            else:
                value = keywords.get(param, unknown())
            self.store(param, value, state)
        frame = Frame(caller.sinks, caller.depth + 1)
        try:
            end = self.block(function.body, state, frame)
        finally:
            self.stmt, self.frame = caller_stmt, caller
        results = frame.returns + ([(const(None), end)] if end is not None else [])
        if not results:
            raise Unreachable
        for _, returned in results:
            for name, value in saved.items():
                if value is None:
                    returned.vars.pop(name, None)
                else:
                    returned.vars[name] = value
            returned.path = path
        return results


#: How each kind of expression evaluates (`Interpreter.eval`); any other is `_unmodelled`.
EXPRESSIONS: dict[type, Callable[..., Value]] = {
    ast.Constant: Expressions._constant,
    ast.Name: Expressions._name,
    ast.Attribute: Expressions._attribute,
    ast.Subscript: Expressions._subscript,
    ast.Call: Expressions._call,
    ast.BoolOp: Expressions._boolop,
    ast.UnaryOp: Expressions._unaryop,
    ast.BinOp: Expressions._binop,
    ast.Compare: Expressions._compare,
    ast.IfExp: Expressions._ifexp,
    ast.Tuple: Expressions._sequence,
    ast.List: Expressions._sequence,
    ast.Set: Expressions._set,
    ast.GeneratorExp: Expressions._comprehension,
    ast.ListComp: Expressions._comprehension,
    ast.SetComp: Expressions._comprehension,
    ast.NamedExpr: Expressions._namedexpr,
}
