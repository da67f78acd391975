"""What evaluating an expression may take beyond its own operands (`evaluators` compiles those):
comprehensions over known sequences run item by item, pure builtins, string methods and module
functions folded, and local helpers inlined at the call with their `nonlocal` writes landing in
the caller."""

from __future__ import annotations

import ast

from lint_plugin.engine.absint import (
    EMPTY,
    MAX_CHOICES,
    State,
    Value,
    const,
    join_all,
    unknown,
    with_deps,
)
from lint_plugin.engine.interpret.folding import (
    PURE_BUILTINS,
    apply,
    join_all_values,
    known_items,
)
from lint_plugin.engine.interpret.frames import Frame, Unreachable
from lint_plugin.engine.pure_functions import facts_read, typed_value

#: Nested helper calls inlined before a call's effect is over-approximated instead.
MAX_INLINE_DEPTH = 8


class Expressions:
    """How `Interpreter` evaluates what an evaluator hands over to the run."""

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
        the caller's state is left as it was. Nested too deep, the result is unknown.

        The observer is not told of the function's `if`s and returns: it watches the
        selector's scope, which this is not. So the outcome is decided by the arguments, the
        path, the depth and the facts the function can read (`_pure_key`), and a run that
        meets a call decided alike takes the outcome an earlier run kept (`pure_runs`): of the
        seven runs of TE 2.20.2's selector that call `get_qkv_format(qkv_layout,
        inference_params)`, three run it."""
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
        key = self._pure_key(function, arguments, keywords, state.path)
        kept = None if key is None else self.program.pure_runs.get(key)
        if kept is not None and self._affords(kept[1]):
            self.statements += kept[1]
            if kept[0] is None:
                raise Unreachable
            return with_deps(kept[0], deps)
        counted = self.statements
        scope = State({}, state.path)
        for param, value in self._bound_parameters(function.args, arguments, keywords, scope):
            self.store(param, value, scope)
        frame = Frame([], caller.depth + 1)
        relevant, trace, observer = self.relevant, self.trace, self.observer
        self.relevant = self.trace = self.observer = None
        try:
            end = self.block(function.body, scope, frame)
        finally:
            self.stmt, self.frame = caller_stmt, caller
            self.relevant, self.trace, self.observer = relevant, trace, observer
        results = [value for value, _ in frame.returns]
        if end is not None:
            results.append(const(None))
        outcome = join_all_values(results) if results else None
        if key is not None:
            self.program.pure_runs[key] = (outcome, self.statements - counted)
        if outcome is None:
            raise Unreachable
        return with_deps(outcome, deps)

    def _pure_key(
        self, function: ast.FunctionDef, arguments: list[Value], keywords: dict, path
    ) -> tuple | None:
        """What decides a pure function's run (`_run_pure`), as a key of `Program.pure_runs`;
        None where the run is not to be kept (an argument of a type `typed_value` does not
        know, a "what if" evaluation of an observer's)."""
        if self._pure_facts is NOT_YET:
            self._pure_facts = facts_read(self.program, self.facts, self.choices)
        if self._pure_facts is None or self.overrides:
            return None
        try:
            return (
                function,
                tuple(map(typed_value, arguments)),
                tuple((name, typed_value(value)) for name, value in keywords.items()),
                path,
                self.frame.depth,
                self._pure_facts,
            )
        except TypeError:
            return None

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


#: `Interpreter._pure_facts` before a run's first pure call works it out.
NOT_YET = object()
