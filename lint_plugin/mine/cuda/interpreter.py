"""Runs a flash-attn entry point's dispatch, for every architecture and selector input at once.

From an entry point (`mha_bwd`) the interpreter follows what the host code does: declarations
and assignments (into `params` through the `set_params_*` helpers), `if` / `if constexpr`,
calls into the library's own functions (template arguments bound, explicit specializations
chosen by their arguments), immediately-called lambdas, and the `*_SWITCH` macros, whose bodies
are interpreted with their parameters bound to the call's arguments: `HEADDIM_SWITCH(params.d,
...)` really does run the 256 kernels for head dim 224. Device queries answer from
`lint_plugin.mine.devices`: `cudaDeviceGetAttribute(&x, cudaDevAttrMaxSharedMemoryPerBlockOptin,
device)` sets `x` to the architecture's opt-in shared memory, so a shared-memory threshold
splits the architectures like a compute-capability test does.

Every path ends one of three ways, recorded as a leaf with the inputs that take it: a kernel
was launched (a call to a function whose body launches, `<<<...>>>` or a CUTLASS launch, which
is not followed further), a `TORCH_CHECK` (or `throw`) refused, or the entry returned having
launched nothing. For the last, the *site* is the last branch taken away from a launch: an arm
without one whose other arm has one (seed 001's `if constexpr (!Is_dropout)` without an
`else`). A refusal or branch decided by something the inputs do not determine (`UNKNOWN`) is
marked undecided, with the condition's text. Loops are not followed: what they assign becomes
unknown.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from tree_sitter import Node

from lint_plugin.mine.cuda.syntax import (
    LAUNCH_CALLS,
    Function,
    Library,
    Macro,
    active_children,
    launches,
    live_branch,
    named,
    node_text,
    unqualified,
    walk,
)
from lint_plugin.mine.cuda.syntax import one_line as _one_line
from lint_plugin.mine.cuda.paths import Leaf, State, TooManyPaths, merge
from lint_plugin.mine.cuda.values import (
    DEVICE_FACTS,
    STANDARD,
    UNKNOWN,
    Closure,
    Device,
    FunctionRef,
    Name,
    NeedSplit,
    Optional,
    Ref,
    Region,
    Sym,
    Tensor,
    combine,
    concrete,
    hashable,
    lift,
    standard,
    truth_of,
    unary,
    values_of,
)
from lint_plugin.mine.findings import NO_LAUNCH, REFUSAL, Site

#: Calls that refuse when their first argument is false.
REFUSAL_CALLS = frozenset({"TORCH_CHECK", "TORCH_CHECK_VALUE", "TORCH_INTERNAL_ASSERT"})
#: dtype constants, by their last name component (`torch::kBFloat16`, `at::ScalarType::Half`).
DTYPES = {
    "kFloat16": "fp16", "kHalf": "fp16", "Half": "fp16", "half_t": "fp16",
    "kBFloat16": "bf16", "BFloat16": "bf16", "bfloat16_t": "bf16",
    "Float8_e4m3fn": "fp8_e4m3", "float_e4m3_t": "fp8_e4m3",
    "Float8_e5m2": "fp8_e5m2", "kFloat": "fp32", "kFloat32": "fp32", "Float": "fp32",
    "kInt32": "int32", "kInt": "int32", "Int": "int32",
}  # fmt: skip
#: Tensor methods that return the same data in another shape (the dtype stays).
TENSOR_VIEWS = frozenset(
    {"reshape", "transpose", "view", "contiguous", "permute", "squeeze", "unsqueeze", "flatten"}
)
NUMBER = re.compile(r"^(0[xX][0-9a-fA-F]+|[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)")


@dataclass
class Context:
    """Where the code being run comes from: its function, and a macro's argument bindings."""

    function: str
    file: str
    macro: Mapping[str, tuple[Any, "Context"]] | None = None


@dataclass
class Entry:
    """An entry point to run: its function, and what each parameter holds."""

    function: Function
    #: Parameter name -> value (`Sym`, a constant, `Tensor`, `Optional`); others are unknown.
    arguments: Mapping[str, Any]
    #: Local variables that hold an input whatever the code computes them from (`head_size`).
    pinned: Mapping[str, Any]
    domains: Mapping[str, frozenset]


#: Paths followed at most per entry before the interpreter gives up on it.
MAX_STATES = 20000


class Interpreter:
    def __init__(self, library: Library) -> None:
        self.library = library
        self._may_launch: dict[tuple, bool] = {}
        self._function_launches: dict[int, bool] = {}
        self.pinned: Mapping[str, Any] = {}
        self._callees: dict[int, str] = {}
        # Caches by node id: the library keeps its trees, so ids stay unique while it lives.
        self._texts: dict[int, str] = {}
        self._specialized: dict[str, dict[tuple, Function]] = {}
        self._calls_inside: dict[int, bool] = {}

    # -- entry -----------------------------------------------------------------------------

    def text(self, node: Node) -> str:
        if node.id not in self._texts:
            self._texts[node.id] = _one_line(node)
        return self._texts[node.id]

    def run(self, entry: Entry) -> list[Leaf]:
        self.pinned = entry.pinned
        function = entry.function
        scope = {
            p.name: entry.arguments.get(p.name, self._parameter(p.type)) for p in function.params
        }
        state = State([scope], {}, Region((dict(entry.domains),)))
        context = Context(function.name, function.file)
        leaves = []
        for final, _ in merge(self.block(function.body, state, context)):
            if final.refusal is not None:
                leaves.append(Leaf(final.domains, REFUSAL, final.refusal, final.undecided))
            elif final.launched:
                leaves.append(Leaf(final.domains, "launch", None, None))
            elif final.site is not None:
                leaves.append(Leaf(final.domains, NO_LAUNCH, final.site, final.undecided))
        return leaves

    def _parameter(self, declared: str) -> Any:
        if "optional" in declared:
            return Optional(UNKNOWN)
        if "Tensor" in declared:
            return Tensor(UNKNOWN)
        return UNKNOWN

    # -- statements ------------------------------------------------------------------------

    def block(self, node: Node, state: State, context: Context, scoped: bool = True) -> list:
        """Runs a compound statement (or a preprocessor branch): [(state, flow)]."""
        if scoped:
            state.scopes.append({})
        running = [state]
        done = []
        for statement in active_children(node, self.library.defined):
            following = []
            for current in running:
                for after, flow in self.statement(statement, current, context):
                    if flow is None:
                        following.append(after)
                    else:
                        done.append((after, flow))
            running = following
            if len(running) + len(done) > MAX_STATES:
                raise TooManyPaths(
                    f"{context.function} ({context.file}) has more than {MAX_STATES} paths"
                )
        results = [(s, None) for s in running] + done
        if scoped:
            for after, _ in results:
                after.scopes.pop()
        return results

    def statement(self, node: Node, state: State, context: Context) -> list:
        try:
            return self._statement(node, state, context)
        except NeedSplit as split:
            results = []
            for part in split.parts:
                copy = state.copy()
                copy.domains = copy.domains.restrict(split.name, part)
                results += self.statement(node, copy, context)
            return results

    def _statement(self, node: Node, state: State, context: Context) -> list:
        kind = node.type
        if kind == "compound_statement":
            return self.block(node, state, context)
        if kind in ("preproc_ifdef", "preproc_if"):
            return self.block(live_branch(node, self.library.defined), state, context, False)
        if kind == "expression_statement":
            if not named(node):
                return [(state, None)]
            expression = named(node)[0]
            if expression.type == "call_expression" and self._callee(expression) in REFUSAL_CALLS:
                return self.check(expression, state, context)
            return self._flows(self.evaluate(expression, state, context))
        if kind == "declaration":
            return self._flows(self.declaration(node, state, context))
        if kind == "alias_declaration":  # using elem_type = cutlass::half_t;
            name = node_text(node.child_by_field_name("name"))
            state.scopes[-1][name] = self.type_value(node.child_by_field_name("type"), state)
            return [(state, None)]
        if kind == "if_statement":
            return self.branch(node, state, context)
        if kind == "return_statement":
            if not named(node):
                return [(state, ("return", UNKNOWN))]
            results = self.evaluate(named(node)[0], state, context)
            return [(s, REFUSED if s.refusal else ("return", v)) for s, v in results]
        if kind == "throw_statement":
            state.refusal = self._site(REFUSAL, node, context, state, self.text(node), "")
            return [(state, REFUSED)]
        if kind in ("for_statement", "for_range_loop", "while_statement", "do_statement"):
            self._havoc(node, state)
            return [(state, None)]
        return [(state, None)]

    def _flows(self, results: list) -> list:
        return [(s, REFUSED if s.refusal else None) for s, _ in results]

    def _havoc(self, node: Node, state: State) -> None:
        """Whatever a loop assigns becomes unknown."""
        for inner in walk(node):
            target = None
            if inner.type == "assignment_expression":
                target = inner.child_by_field_name("left")
            elif inner.type == "update_expression":
                target = inner.child_by_field_name("argument")
            if target is not None and target.type == "identifier":
                try:
                    state.lookup(node_text(target))
                except KeyError:
                    continue
                state.assign(node_text(target), UNKNOWN)

    def check(self, call: Node, state: State, context: Context) -> list:
        """`TORCH_CHECK(condition, message...)`: refuses where the condition is false."""
        arguments = named(call.child_by_field_name("arguments"))
        message = " ".join(_literal(a) for a in arguments[1:])
        site = self._site(
            REFUSAL, call, context, state, self.text(call), message, self.text(arguments[0])
        )
        results = []
        for current, truth, _ in self.condition(arguments[0], state, context):
            if current.refusal is not None:
                results.append((current, REFUSED))
                continue
            if truth is True:
                results.append((current, None))
                continue
            refused = current.copy() if truth is UNKNOWN else current
            refused.refusal = site
            refused.undecided = self.text(arguments[0]) if truth is UNKNOWN else None
            results.append((refused, REFUSED))
            if truth is UNKNOWN:
                results.append((current, None))
        return results

    def branch(self, node: Node, state: State, context: Context) -> list:
        test = node.child_by_field_name("condition")
        consequence = node.child_by_field_name("consequence")
        alternative = node.child_by_field_name("alternative")
        if alternative is not None and alternative.type == "else_clause":
            alternative = named(alternative)[0] if named(alternative) else None
        expression = named(test)[-1] if test.type == "condition_clause" else test
        text = self.text(expression)
        arms = {True: consequence, False: alternative}
        launching = {taken: self.may_launch(arm, context, state) for taken, arm in arms.items()}
        results = []
        for current, truth, on_arch in self.condition(expression, state, context):
            if current.refusal is not None:
                results.append((current, REFUSED))
                continue
            for taken in (True, False) if truth is UNKNOWN else (truth,):
                path = current.copy() if truth is UNKNOWN and taken else current
                if launching[not taken] and not launching[taken]:
                    arm_text = text if taken else f"not ({text})"
                    path.site = self._site(
                        NO_LAUNCH, node, context, path, _head(node), "", arm_text
                    )
                    path.undecided = text if truth is UNKNOWN else None
                before = path.arch_branch
                if on_arch:
                    path.arch_branch = text if taken else f"not ({text})"
                arm = arms[taken]
                ran = [(path, None)] if arm is None else self.statement(arm, path, context)
                for after, flow in ran:
                    after.arch_branch = before
                    results.append((after, flow))
        return merge(results) if len(results) > 1 else results

    def condition(self, node: Node, state: State, context: Context) -> list:
        """[(state, True | False | UNKNOWN, whether the arch decides it)], symbols split."""
        found = []
        for current, value in self.evaluate(node, state, context):
            if current.refusal is not None:
                found.append((current, UNKNOWN, False))
                continue
            on_arch = isinstance(value, Sym) and value.name == ARCH
            if isinstance(value, Sym):
                by_truth: dict[Any, set] = {}
                for v, result in values_of(value, current.domains).items():
                    by_truth.setdefault(truth_of(result), set()).add(v)
                if len(by_truth) == 1:
                    found.append((current, next(iter(by_truth)), on_arch))
                    continue
                region = current.domains
                for index, (truth, part) in enumerate(by_truth.items()):
                    copy = current.copy() if index else current
                    copy.domains = region.restrict(value.name, frozenset(part))
                    found.append((copy, truth, on_arch))
                continue
            found.append((current, truth_of(value), on_arch))
        return found

    def declaration(self, node: Node, state: State, context: Context) -> list:
        type_node = node.child_by_field_name("type")
        results = [(state, None)]
        for declarator in node.children_by_field_name("declarator"):
            following = []
            for current, _ in results:
                if current.refusal is not None:
                    following.append((current, None))
                    continue
                following += self._declare(declarator, type_node, current, context)
            results = following
        return results

    def _declare(self, declarator: Node, type_node: Node, state: State, context: Context) -> list:
        if declarator.type == "init_declarator":
            target = declarator.child_by_field_name("declarator")
            value_node = declarator.child_by_field_name("value")
        else:
            target, value_node = declarator, None
        if target.type == "structured_binding_declarator":
            names = [self._declared_name(n, context) for n in named(target)]
            results = self.evaluate(value_node, state, context)
            for current, value in results:
                parts = value if isinstance(value, tuple) and len(value) == len(names) else None
                for index, name in enumerate(names):
                    current.scopes[-1][name] = parts[index] if parts else UNKNOWN
            return [(s, None) for s, _ in results]
        while target.type in ("reference_declarator", "pointer_declarator"):
            target = named(target)[-1]
        if target.type not in ("identifier", "field_identifier"):
            return [(state, None)]
        name = self._declared_name(target, context)
        if name in self.pinned:
            state.scopes[-1][name] = self.pinned[name]
            return [(state, None)]
        if value_node is None:
            state.scopes[-1][name] = self._fresh(target, type_node, state)
            return [(state, None)]
        if value_node.type == "argument_list":  # `int x(5);`
            value_node = named(value_node)[0] if named(value_node) else None
            if value_node is None:
                state.scopes[-1][name] = UNKNOWN
                return [(state, None)]
        results = self.evaluate(value_node, state, context)
        for current, value in results:
            current.scopes[-1][name] = value
        return [(s, None) for s, _ in results]

    def _declared_name(self, node: Node, context: Context) -> str:
        """A declarator's name; a macro parameter stands for its argument's spelling."""
        name = node_text(node)
        if context.macro and name in context.macro:
            return node_text(context.macro[name][0])
        return name

    def _fresh(self, declarator: Node, type_node: Node | None, state: State) -> Any:
        """A struct object, numbered by its declaration so that paths stay comparable."""
        if type_node is None or type_node.type in ("primitive_type", "sized_type_specifier"):
            return UNKNOWN
        identifier = declarator.id
        while identifier in state.heap:
            identifier += 1 << 48
        state.heap[identifier] = {}
        return Ref(identifier)

    # -- expressions -----------------------------------------------------------------------

    def evaluate(self, node: Node, state: State, context: Context) -> list:
        """[(state, value)]; calls into the library may fork the state."""
        kind = node.type
        simple = self._simple(node, kind, state, context)
        if simple is not _NOT_SIMPLE:
            return [(state, simple)]
        if kind == "call_expression":
            return self.call(node, state, context)
        if kind == "parenthesized_expression":
            return self.evaluate(named(node)[-1], state, context)
        if kind == "binary_expression":
            return self._binary(node, state, context)
        if kind == "unary_expression":
            op = node_text(node.child_by_field_name("operator"))
            return [
                (s, unary(op, v))
                for s, v in self.evaluate(node.child_by_field_name("argument"), state, context)
            ]
        if kind == "conditional_expression":
            return self._conditional(node, state, context)
        if kind == "assignment_expression":
            return self._assignment(node, state, context)
        if kind == "field_expression":
            return [
                (s, self._field(v, node_text(node.child_by_field_name("field")), s))
                for s, v in self.evaluate(node.child_by_field_name("argument"), state, context)
            ]
        if kind == "initializer_list":
            return self._sequence(named(node), state, context, tuple)
        if kind == "cast_expression":
            return self.evaluate(node.child_by_field_name("value"), state, context)
        if kind == "subscript_expression":
            return self._subscript(node, state, context)
        if kind == "comma_expression":
            results = self.evaluate(node.child_by_field_name("left"), state, context)
            return self._then(results, node.child_by_field_name("right"), context)
        if kind == "update_expression":
            target = node.child_by_field_name("argument")
            if target.type == "identifier":
                state.assign(node_text(target), UNKNOWN)
            return [(state, UNKNOWN)]
        return [(state, UNKNOWN)]

    def _simple(self, node: Node, kind: str, state: State, context: Context) -> Any:
        if kind == "number_literal":
            return _number(node_text(node))
        if kind == "true":
            return True
        if kind == "false":
            return False
        if kind in ("nullptr", "null"):
            return None
        if kind in ("string_literal", "concatenated_string", "raw_string_literal"):
            return _literal(node)
        if kind == "identifier":
            return self._identifier(node, state, context)
        if kind in ("qualified_identifier", "type_descriptor", "type_identifier"):
            return self.type_value(node, state)
        if kind == "lambda_expression":
            return Closure(node, context)
        if kind == "pointer_expression" and node_text(node.children[0]) == "&":
            target = node.child_by_field_name("argument")
            name = unqualified(node_text(target))
            if target.type != "field_expression" and name in self.library.functions:
                try:
                    state.lookup(node_text(target))
                except KeyError:
                    return FunctionRef(name)
            return ("address-of", target)
        return _NOT_SIMPLE

    def _identifier(self, node: Node, state: State, context: Context) -> Any:
        name = node_text(node)
        if context.macro and name in context.macro:
            argument, argument_context = context.macro[name]
            if isinstance(argument, tuple):  # __VA_ARGS__
                return argument
            values = self.evaluate(argument, state, argument_context)
            if len(values) == 1 and values[0][0] is state:
                return values[0][1]
            return UNKNOWN
        try:
            return state.lookup(name)
        except KeyError:
            pass
        if name in self.pinned:
            return self.pinned[name]
        if name == "std::nullopt" or name == "nullopt":
            return None
        return DTYPES.get(name, Name(name))

    def type_value(self, node: Node, state: State) -> Any:
        """A type or qualified constant: a bound template parameter, a dtype, or its name."""
        text = re.sub(r"\s+", "", node_text(node))
        try:
            return state.lookup(text)
        except KeyError:
            pass
        last = unqualified(text)
        if text == "std::nullopt":
            return None
        return DTYPES.get(last, Name(text))

    def _sequence(self, nodes: Iterable[Node], state: State, context: Context, wrap) -> list:
        results = [(state, [])]
        for element in nodes:
            following = []
            for current, values in results:
                if current.refusal is not None:
                    following.append((current, values))
                    continue
                for after, value in self.evaluate(element, current, context):
                    following.append((after, [*values, value]))
            results = following
        return [(s, wrap(v)) for s, v in results]

    def _then(self, results: list, node: Node, context: Context) -> list:
        following = []
        for current, _ in results:
            if current.refusal is not None:
                following.append((current, UNKNOWN))
            else:
                following += self.evaluate(node, current, context)
        return following

    def _binary(self, node: Node, state: State, context: Context) -> list:
        op = node_text(node.child_by_field_name("operator"))
        left_results = self.evaluate(node.child_by_field_name("left"), state, context)
        results = []
        for current, left in left_results:
            if current.refusal is not None:
                results.append((current, UNKNOWN))
                continue
            if op in ("&&", "||"):
                truth = truth_of(left)
                if truth is (op == "||"):
                    results.append((current, truth))
                    continue
            for after, right in self.evaluate(node.child_by_field_name("right"), current, context):
                results.append((after, combine(op, left, right, after.domains)))
        return results

    def _conditional(self, node: Node, state: State, context: Context) -> list:
        symbolic = self._symbolic_conditional(node, state, context)
        if symbolic is not None:
            return [(state, symbolic)]
        results = []
        for current, truth, _ in self.condition(
            node.child_by_field_name("condition"), state, context
        ):
            if current.refusal is not None:
                results.append((current, UNKNOWN))
            elif truth is UNKNOWN:
                arms = [
                    self.evaluate(node.child_by_field_name(f), current.copy(), context)
                    for f in ("consequence", "alternative")
                ]
                values = {hashable(v) for arm in arms for _, v in arm}
                results.append((current, next(iter(values)) if len(values) == 1 else UNKNOWN))
            else:
                arm = node.child_by_field_name("consequence" if truth else "alternative")
                results += self.evaluate(arm, current, context)
        return results

    def _symbolic_conditional(self, node: Node, state: State, context: Context) -> Any:
        """`c ? a : b` as one symbolic value when `c` is a function of a symbol and `a`, `b`
        are constants, unknowns or functions of the same symbol (nothing forks)."""
        if node.id not in self._calls_inside:
            self._calls_inside[node.id] = any(n.type == "call_expression" for n in walk(node))
        if self._calls_inside[node.id]:
            return None  # a call may fork or write: evaluated the plain way
        parts = []
        for field_name in ("condition", "consequence", "alternative"):
            results = self.evaluate(node.child_by_field_name(field_name), state, context)
            parts.append(results[0][1])
        test, yes, no = parts
        names = {p.name for p in parts if isinstance(p, Sym)}
        if not isinstance(test, Sym) or len(names) != 1:
            return None
        if any(not isinstance(p, (Sym, int, float, bool)) and p is not UNKNOWN for p in (yes, no)):
            return None
        return Sym(test.name, ("cond", test.expr, lift(yes), lift(no)))

    def _assignment(self, node: Node, state: State, context: Context) -> list:
        op = node_text(node.child_by_field_name("operator"))
        target = node.child_by_field_name("left")
        results = self.evaluate(node.child_by_field_name("right"), state, context)
        for current, value in results:
            if current.refusal is not None:
                continue
            if op != "=":
                old = self.evaluate(target, current, context)[0][1]
                value = combine(op[:-1], old, value, current.domains)
            self._store(target, value, current, context)
        return results

    def _store(self, target: Node, value: Any, state: State, context: Context) -> None:
        if target.type == "identifier":
            name = self._declared_name(target, context)
            if name in self.pinned:
                return
            try:
                old = state.lookup(name)
            except KeyError:
                state.assign(name, value)
                return
            if isinstance(old, Ref) and isinstance(value, tuple):  # params = {};
                state.heap[old.id] = {}
            else:
                state.assign(name, value)
        elif target.type == "field_expression":
            owner = self.evaluate(target.child_by_field_name("argument"), state, context)[0][1]
            if isinstance(owner, Ref):
                state.heap[owner.id][node_text(target.child_by_field_name("field"))] = value

    def _field(self, owner: Any, name: str, state: State) -> Any:
        if isinstance(owner, Ref):
            return state.heap.get(owner.id, {}).get(name, UNKNOWN)
        if isinstance(owner, Device) and name in DEVICE_FACTS:
            return Sym(ARCH, ("fact", name, ("x",)))
        return UNKNOWN

    def _subscript(self, node: Node, state: State, context: Context) -> list:
        results = []
        index_node = node.child_by_field_name("index") or named(node)[-1]
        for current, owner in self.evaluate(node.child_by_field_name("argument"), state, context):
            for after, index in self.evaluate(index_node, current, context):
                index = concrete(index, after.domains)
                if (
                    isinstance(owner, tuple)
                    and isinstance(index, int)
                    and -len(owner) <= index < len(owner)
                ):
                    results.append((after, owner[index]))
                else:
                    results.append((after, UNKNOWN))
        return results

    # -- calls -----------------------------------------------------------------------------

    def _callee(self, call: Node) -> str:
        name = self._callees.get(call.id)
        if name is None:
            name = self._callees[call.id] = unqualified(
                node_text(call.child_by_field_name("function"))
            )
        return name

    def call(self, node: Node, state: State, context: Context) -> list:
        callee = node.child_by_field_name("function")
        arguments = named(node.child_by_field_name("arguments"))
        name = self._callee(node)
        macro = self.library.macro(name) if callee.type == "identifier" else None
        if macro is not None and macro.body is not None:
            return self.expand(macro, arguments, state, context)
        if name in LAUNCH_CALLS:
            state.launched, state.site, state.undecided = True, None, None
            return [(state, UNKNOWN)]
        if callee.type == "lambda_expression":  # [&] { ... }()
            return self.closure(Closure(callee, context), [], state)
        if callee.type == "field_expression":
            return self._method(callee, arguments, state, context)
        template_arguments = ()
        if callee.type == "template_function":
            template_arguments = named(callee.child_by_field_name("arguments"))
        if name == "static_cast" or name == "reinterpret_cast":
            return self.evaluate(arguments[0], state, context)
        results = self._sequence(arguments, state, context, list)
        found = []
        for current, values in results:
            if current.refusal is not None:
                found.append((current, UNKNOWN))
                continue
            found += self._call_value(name, callee, template_arguments, values, current, context)
        return found

    def _call_value(self, name, callee, template_arguments, values, state, context) -> list:
        target = self._identifier(callee, state, context) if callee.type == "identifier" else None
        if isinstance(target, FunctionRef):
            name = target.name
        if isinstance(target, Closure):
            return self.closure(target, values, state)
        if isinstance(target, tuple) and target and isinstance(target[0], Closure):
            return self.closure(target[0], values, state)  # __VA_ARGS__()
        if name == "cudaDeviceGetAttribute" and len(values) >= 2:
            where, attribute = values[0], values[1]
            if (
                isinstance(where, tuple)
                and where[0] == "address-of"
                and isinstance(attribute, Name)
            ):
                fact = attribute.text if attribute.text in DEVICE_FACTS else None
                value = Sym(ARCH, ("fact", fact, ("x",))) if fact else UNKNOWN
                self._store(where[1], value, state, context)
            return [(state, Name("cudaSuccess"))]
        if name == "getCurrentDeviceProperties":
            return [(state, Device())]
        if name == "get" and template_arguments:  # std::get<0>(tuple)
            index = concrete(self.type_value(template_arguments[0], state), state.domains)
            owner = values[0] if values else UNKNOWN
            if isinstance(index, Name):
                index = _number(index.text)
            if isinstance(owner, tuple) and isinstance(index, int) and index < len(owner):
                return [(state, owner[index])]
            return [(state, UNKNOWN)]
        if name in ("make_tuple", "tuple", "tie"):
            return [(state, tuple(values))]
        if name in STANDARD and values:
            return [(state, standard(name, values, state.domains))]
        for value in values:  # an unknown callee may write through `&x`
            if isinstance(value, tuple) and value and value[0] == "address-of":
                self._store(value[1], UNKNOWN, state, context)
        function = self.resolve(name, template_arguments, values, state)
        if function is None:
            return [(state, UNKNOWN)]
        if function.launches:
            state.launched, state.site, state.undecided = True, None, None
            return [(state, UNKNOWN)]
        return self.enter(function, template_arguments, values, state)

    def _method(self, callee: Node, arguments, state: State, context: Context) -> list:
        method = node_text(callee.child_by_field_name("field"))
        results = []
        for current, owner in self.evaluate(callee.child_by_field_name("argument"), state, context):
            if isinstance(owner, Tensor) and method in ("dtype", "scalar_type"):
                results.append((current, owner.dtype))
            elif isinstance(owner, Tensor) and method in TENSOR_VIEWS:
                results.append((current, owner))
            elif isinstance(owner, Optional) and method == "has_value":
                value = owner.value
                results.append((current, UNKNOWN if value is UNKNOWN else value is not None))
            elif isinstance(owner, Optional) and method == "value":
                value = owner.value
                results.append((current, Tensor(UNKNOWN) if value in (UNKNOWN, None) else value))
            else:
                results.append((current, UNKNOWN))
        return results

    def resolve(self, name: str, template_arguments, values, state: State) -> Function | None:
        """The definition a call runs: the explicit specialization its template arguments
        select, else the one (primary) definition taking that many arguments."""
        candidates = self.library.functions.get(name, [])
        if not candidates:
            return None
        if template_arguments:
            wanted = tuple(
                _spelling(concrete(self._template_argument(a, state), state.domains))
                for a in template_arguments
            )
            found = self._specializations(name).get(wanted)
            if found is not None:
                return found
        plain = [f for f in candidates if f.specialization is None]
        fitting = [f for f in plain if len(f.params) >= len(values)] or plain
        return fitting[0] if fitting else None

    def _specializations(self, name: str) -> dict[tuple, Function]:
        if name not in self._specialized:
            self._specialized[name] = {
                tuple(_spelling(_parse_argument(a)) for a in f.specialization): f
                for f in self.library.functions.get(name, [])
                if f.specialization is not None
            }
        return self._specialized[name]

    def _template_argument(self, node: Node, state: State) -> Any:
        if node.type == "type_descriptor":
            return self.type_value(node, state)
        return self._constant(node, state)

    def _constant(self, node: Node, state: State) -> Any:
        values = self.evaluate(node, state, Context("", ""))
        return values[0][1] if values else UNKNOWN

    def enter(self, function: Function, template_arguments, values, state: State) -> list:
        caller = state.scopes
        scope: dict[str, Any] = {}
        bound = [
            concrete(self._template_argument(a, state), state.domains) for a in template_arguments
        ]
        for index, parameter in enumerate(function.template):
            if index < len(bound):
                scope[parameter] = bound[index]
            elif parameter in function.template_defaults:
                scope[parameter] = self._constant(function.template_defaults[parameter], state)
        context = Context(function.name, function.file)
        for index, parameter in enumerate(function.params):
            if index < len(values):
                scope[parameter.name] = values[index]
            elif parameter.default is not None:
                scope[parameter.name] = self._constant(parameter.default, state)
            else:
                scope[parameter.name] = UNKNOWN
        state.scopes = [scope]
        results = []
        for index, (after, flow) in enumerate(self.block(function.body, state, context)):
            after.scopes = caller if index == 0 else [dict(s) for s in caller]
            results.append((after, flow[1] if flow and flow[0] == "return" else UNKNOWN))
        return merge(results)

    def closure(self, closure: Closure, values, state: State) -> list:
        node = closure.node
        parameters = node.child_by_field_name("declarator")
        scope: dict[str, Any] = {}
        if parameters is not None:
            names = [
                node_text(n)
                for p in named(parameters.child_by_field_name("parameters"))
                for n in walk(p)
                if n.type == "identifier"
            ]
            scope.update(zip(names, values))
        state.scopes.append(scope)
        results = []
        for after, flow in self.block(node.child_by_field_name("body"), state, closure.context):
            after.scopes.pop()
            results.append((after, flow[1] if flow and flow[0] == "return" else UNKNOWN))
        return merge(results)

    def expand(self, macro: Macro, arguments, state: State, context: Context) -> list:
        """A function-like macro: its body run with its parameters bound to the arguments."""
        bindings: dict[str, Any] = {}
        names = macro.params or ()
        for index, name in enumerate(names):
            if name == "__VA_ARGS__":
                rest = arguments[index:]
                lambdas = tuple(Closure(a, context) for a in rest if a.type == "lambda_expression")
                bindings[name] = (lambdas, context)
            elif index < len(arguments):
                bindings[name] = (arguments[index], context)
        inner = Context(macro.name, macro.file, _MacroBindings(bindings))
        return self.evaluate(macro.body, state, inner)

    # -- launch reachability ---------------------------------------------------------------

    def may_launch(self, node: Node | None, context: Context, state: State | None = None) -> bool:
        """Whether `node` contains a launch, a call that may lead to one (through a variable
        holding a function, as `state` has it), or (in a macro body) a call of a lambda
        argument that does."""
        if node is None:
            return False
        key = (node.id, id(context.macro) if context.macro else 0)
        if key in self._may_launch:
            return self._may_launch[key]
        self._may_launch[key] = False  # recursion guard
        calls = [call for call in walk(node) if call.type == "call_expression"]
        found = launches(node) or any(self._call_may_launch(c, context) for c in calls)
        self._may_launch[key] = found
        if not found and state is not None:
            return any(self._held_launches(c, state) for c in calls)
        return found

    def _held_launches(self, call: Node, state: State) -> bool:
        try:
            held = state.lookup(node_text(call.child_by_field_name("function")))
        except KeyError:
            return False
        return isinstance(held, FunctionRef) and any(
            self.function_launches(f) for f in self.library.functions.get(held.name, ())
        )

    def _call_may_launch(self, call: Node, context: Context) -> bool:
        name = self._callee(call)
        if context.macro and name in context.macro:
            closures, _ = context.macro[name]
            return isinstance(closures, tuple) and any(
                self.may_launch(c.node, c.context) for c in closures
            )
        return any(self.function_launches(f) for f in self.library.functions.get(name, ()))

    def function_launches(self, function: Function) -> bool:
        key = id(function)
        if key not in self._function_launches:
            self._function_launches[key] = False
            self._function_launches[key] = function.launches or self.may_launch(
                function.body, Context(function.name, function.file)
            )
        return self._function_launches[key]

    # -- sites -----------------------------------------------------------------------------

    def _site(self, kind, node, context, state, text, message, condition="") -> Site:
        """Where it happens; `backward` is the entry point's, filled in by `sites`."""
        return Site(
            file=context.file,
            line=node.start_point[0] + 1,
            function=context.function,
            text=text,
            message=message,
            backward=False,
            condition=condition,
            branch=state.arch_branch,
            kind=kind,
        )


class _MacroBindings(dict):
    """A macro's bindings; hashed by identity (a macro context is one expansion)."""

    __hash__ = object.__hash__


ARCH = "arch"
REFUSED = ("refused",)
_NOT_SIMPLE = object()


def _number(text: str) -> Any:
    match = NUMBER.match(text)
    if match is None:
        return UNKNOWN
    literal = match.group(1)
    if literal.lower().startswith("0x"):
        return int(literal, 16)
    if "." in literal or "e" in literal.lower() or text.rstrip("uUlL").lower().endswith("f"):
        return float(literal)
    return int(literal)


def _literal(node: Node) -> str:
    """A message as written: string literals joined, anything else as source."""
    if node.type == "string_literal":
        return "".join(node_text(c) for c in node.named_children if c.type == "string_content")
    if node.type == "concatenated_string":
        return "".join(_literal(c) for c in named(node))
    return _one_line(node)


def _parse_argument(text: str) -> Any:
    if text in ("true", "false"):
        return text == "true"
    number = _number(text)
    if number is not UNKNOWN and str(number) == text:
        return number
    return DTYPES.get(unqualified(re.sub(r"\s+", "", text)), re.sub(r"\s+", "", text))


def _spelling(value: Any) -> Any:
    """Template arguments compared by value: numbers, booleans, dtypes, type names."""
    if isinstance(value, Name):
        return DTYPES.get(unqualified(value.text), value.text)
    return value


def _head(node: Node) -> str:
    """`if constexpr (!Is_dropout) {...}`: a branch as evidence quotes it."""
    consequence = node.child_by_field_name("consequence")
    head = node_text(node)[: consequence.start_byte - node.start_byte].strip()
    return (
        " ".join(head.split())
        + " {...}"
        + ("" if node.child_by_field_name("alternative") else " (no else)")
    )
