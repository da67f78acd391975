"""What a selector compares its inputs with: the constants a snapshot's grid is derived from.

A filter is a comparison of an input with a constant (`head_dim_qk > 192`,
`device_compute_capability < (9, 0)`, `attn_mask_type == "arbitrary"`,
`int(os.environ.get("NVTE_FUSED_ATTN", "1"))`): the selector behaves alike for every value on one
side of each constant, so values on both sides of every constant exercise every filter. This
module reads those comparisons off the selector's AST: `get_attention_backend` and the
module-level functions it calls (a fork's dispatcher, TE's nested helpers). It is a reading, not
an analysis: `selector_patch` sits below `lint_plugin` (imports flow codemods -> lint_plugin ->
selector_patch), and the grid needs only which constants each input meets, not what follows.

An input is named as the selector names it: an `AttentionParams` field (or, in the keyword
dialect before TE 1.9, a parameter), a hardware query's answer (`compute_capability`,
`cudnn_version`) or an `NVTE_*` variable. The selector's own locals are followed where they hold
an input (`head_dim_qk = attention_params.head_dim_qk`), an element of one (`window_size[0]`), a
residue (`head_dim_qk % 8`) or a monotone combination (`max(head_dim_qk, head_dim_v)`, TE's
padded head dim, bounds both). Anything else (products of inputs, helper calls such as
`get_qkv_format`) is not inverted: its inputs still get the values their own comparisons give.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Collection, Iterator, Mapping, NamedTuple

SELECTOR = "get_attention_backend"
#: TE's hardware queries, by function name, and the input each answers.
QUERIES = {
    "get_device_compute_capability": "compute_capability",
    "get_device_capability": "compute_capability",
    "get_cudnn_version": "cudnn_version",
}
ENV_PREFIX = "NVTE_"
ENV_READERS = ("get", "getenv")
#: Functions that make a version string comparable (`PkgVersion("2.7")`): read as the string.
VERSION_CALLS = ("PkgVersion", "Version", "parse")
#: Functions that keep the order of their arguments' values (a bound on the result bounds each).
MONOTONE = ("max", "min")
#: Comparison operators, with the input on the left; "contains" is `constant in input`.
OPERATORS = {
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
    ast.In: "in",
    ast.NotIn: "not in",
    ast.Is: "is",
    ast.IsNot: "is not",
}
#: The operator with its operands swapped (`128 < x` is `x > 128`).
FLIPPED = {
    "<": ">",
    "<=": ">=",
    ">": "<",
    ">=": "<=",
    "==": "==",
    "!=": "!=",
    "is": "is",
    "is not": "is not",
    "in": "contains",
    "not in": "not contains",
}


@dataclass(frozen=True)
class Expression:
    """A constant the selector names rather than writes (`torch.float16`, `Float8Tensor`): its
    value exists only in the loaded module, where it is looked up by this dotted name."""

    text: str

    def __repr__(self) -> str:
        return self.text

    def resolve(self, namespace: Mapping[str, object]) -> object:
        """The object the name denotes in the loaded module; `LookupError` if none."""
        root, *attributes = self.text.split(".")
        if root not in namespace:
            raise LookupError(f"{self.text}: not defined in the selector's module")
        found = namespace[root]
        for attribute in attributes:
            try:
                found = getattr(found, attribute)
            except AttributeError:
                raise LookupError(f"{self.text}: not defined in the selector's module") from None
        return found


class Comparison(NamedTuple):
    """`input op value` as the selector writes it, the input on the left."""

    input: str
    op: str
    #: The constant: a literal, an `Expression`, or a tuple of them for `in` / `not in`.
    value: object
    line: int
    #: The comparison's source, for the grid's derivation record.
    text: str
    #: `input[index] op value`.
    index: int | None = None
    #: `input % modulus op value`.
    modulus: int | None = None

    def describe(self) -> str:
        subject = self.input
        if self.index is not None:
            subject = f"{subject}[{self.index}]"
        if self.modulus is not None:
            subject = f"{subject} % {self.modulus}"
        if self.op == "contains":
            return f"{self.value!r} in {subject}"
        if self.op == "not contains":
            return f"{self.value!r} not in {subject}"
        return f"{subject} {self.op} {self.value!r}"


class Reading(NamedTuple):
    """Every comparison of an input with a constant, and the inputs tested for truth."""

    comparisons: tuple[Comparison, ...]
    #: Inputs used as conditions themselves (`if deterministic:`, `fp8 and ...`).
    truth_tested: frozenset[str]
    #: `NVTE_*` variables the selector decides on, with the default it reads them with.
    env: dict[str, str | None]
    #: Pairs of inputs that meet in one condition (or in one local the condition reads), with
    #: the line of the first such condition: ((a, b), line), a < b.
    together: tuple[tuple[tuple[str, str], int], ...] = ()


class _Use(NamedTuple):
    input: str
    index: int | None = None
    modulus: int | None = None


def _env_read(node: ast.AST) -> tuple[str, str | None] | None:
    """`os.environ.get("NVTE_X", "1")`, `os.getenv(...)`, `os.environ["NVTE_X"]`, in `int()`."""
    while (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("int", "bool", "str")
        and len(node.args) == 1
    ):
        node = node.args[0]
    name = default = None
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ENV_READERS
        and node.args
    ):
        name = _string(node.args[0])
        default = _string(node.args[1]) if len(node.args) > 1 else None
    elif isinstance(node, ast.Subscript) and ast.unparse(node.value) == "os.environ":
        name = _string(node.slice)
    if name is None or not name.startswith(ENV_PREFIX):
        return None
    return name, default


def _string(node: ast.AST) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _module_constants(tree: ast.Module) -> dict[str, object]:
    """Top-level `NAME = <literal>` assignments (`SM90_DET_FUSED_THD_BWD_MAX_BHSS = ...`)."""
    constants = {}
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
        ):
            try:
                constants[node.targets[0].id] = ast.literal_eval(node.value)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                continue
    return constants


def _reachable(tree: ast.Module, selector: str) -> list[ast.FunctionDef]:
    """The selector and the module-level functions it calls, transitively."""
    functions = {
        node.name: node
        for node in tree.body
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    }
    if selector not in functions:
        raise ValueError(f"defines no {selector} function")
    found, pending = [], [selector]
    while pending:
        name = pending.pop()
        function = functions[name]
        if function in found:
            continue
        found.append(function)
        for node in ast.walk(function):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                if node.func.id in functions and functions[node.func.id] not in found:
                    pending.append(node.func.id)
    return found


class _Reader:
    """One pass over the reachable functions: locals that hold inputs, then comparisons."""

    def __init__(
        self, tree: ast.Module, selector: str, params_dialect: bool, named: Mapping[str, str]
    ) -> None:
        self.functions = _reachable(tree, selector)
        self.named = named
        self.constants = _module_constants(tree)
        self.local_names = {
            target.id
            for function in self.functions
            for node in ast.walk(function)
            if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For))
            for target in _targets(node)
        } | {arg.arg for function in self.functions for arg in _arguments(function)}
        selector_node = self.functions[0]
        arguments = [arg.arg for arg in _arguments(selector_node)]
        #: Names that hold the `AttentionParams` object.
        self.params: set[str] = set(arguments[:1]) if params_dialect else set()
        #: Local name -> the inputs it holds (one, or several for `max(a, b)`).
        self.held: dict[str, tuple[_Use, ...]] = (
            {} if params_dialect else {name: (_Use(name),) for name in arguments}
        )
        self._follow_params()
        self._follow_locals()

    def _follow_params(self) -> None:
        """A function called with the params object holds it in the matching parameter."""
        functions = {function.name: function for function in self.functions}
        for function in self.functions:
            for node in ast.walk(function):
                if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
                    continue
                callee = functions.get(node.func.id)
                if callee is None:
                    continue
                parameters = [arg.arg for arg in _arguments(callee)]
                for position, argument in enumerate(node.args[: len(parameters)]):
                    if isinstance(argument, ast.Name) and argument.id in self.params:
                        self.params.add(parameters[position])

    def _follow_locals(self) -> None:
        """Locals assigned an input, to a fixed point (aliases of aliases)."""
        assignments = [
            (node.targets[0].id, node.value)
            for function in self.functions
            for node in ast.walk(function)
            if isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
        ]
        changed = True
        while changed:
            changed = False
            for name, value in assignments:
                held = self.held.get(name, ())
                merged = tuple(dict.fromkeys((*held, *self.uses(value))))
                if merged != held:
                    self.held[name] = merged
                    changed = True

    def uses(self, node: ast.AST) -> tuple[_Use, ...]:
        """The inputs `node` holds as a whole, an element, a residue or a monotone bound."""
        env = _env_read(node)
        if env is not None:
            return (_Use(env[0]),)
        if isinstance(node, ast.Name):
            if node.id in self.named:
                return (_Use(self.named[node.id]),)
            return self.held.get(node.id, ())
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if node.value.id in self.params:
                return (_Use(node.attr),)
            text = f"{node.value.id}.{node.attr}"
            return (_Use(self.named[text]),) if text in self.named else ()
        if isinstance(node, ast.Call) and not node.keywords:
            function = node.func
            name = function.id if isinstance(function, ast.Name) else getattr(function, "attr", "")
            if name in QUERIES and not node.args:
                return (_Use(QUERIES[name]),)
            if isinstance(function, ast.Name) and name in MONOTONE:
                return tuple(use for argument in node.args for use in self.uses(argument))
            return ()
        if isinstance(node, ast.Subscript):
            index = self.constant(node.slice)
            if isinstance(index, int) and not isinstance(index, bool):
                return tuple(
                    _Use(use.input, index=index)
                    for use in self.uses(node.value)
                    if use.index is None and use.modulus is None
                )
            return ()
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
            modulus = self.constant(node.right)
            if isinstance(modulus, int) and not isinstance(modulus, bool) and modulus > 1:
                return tuple(
                    _Use(use.input, modulus=modulus)
                    for use in self.uses(node.left)
                    if use.index is None and use.modulus is None
                )
        return ()

    def constant(self, node: ast.AST) -> object:
        """The constant `node` denotes, or `_NOT_CONSTANT`."""
        if isinstance(node, ast.Name) and node.id in self.constants:
            return _frozen(self.constants[node.id])
        try:
            return _frozen(ast.literal_eval(node))
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            pass
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in VERSION_CALLS
            and len(node.args) == 1
            and _string(node.args[0]) is not None
        ):
            return node.args[0].value
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            items = tuple(self.constant(element) for element in node.elts)
            return _NOT_CONSTANT if _NOT_CONSTANT in items else items
        if isinstance(node, (ast.Name, ast.Attribute)) and _dotted(node):
            root = ast.unparse(node).split(".")[0]
            if root not in self.local_names:
                return Expression(ast.unparse(node))
        return _NOT_CONSTANT

    def comparisons(self) -> Iterator[Comparison]:
        for function in self.functions:
            for node in ast.walk(function):
                if isinstance(node, ast.Compare):
                    yield from self._compare(node)

    def _compare(self, node: ast.Compare) -> Iterator[Comparison]:
        operands = [node.left, *node.comparators]
        text = ast.unparse(node)
        for left, operator, right in zip(operands, node.ops, operands[1:]):
            op = OPERATORS[type(operator)]
            for subject, other, written in ((left, right, op), (right, left, FLIPPED[op])):
                uses = self.uses(subject)
                if not uses:
                    continue
                value = self.constant(other)
                if value is _NOT_CONSTANT:
                    break
                if written in ("in", "not in") and not isinstance(value, tuple):
                    break  # membership in a string constant: not a set of values
                for use in uses:
                    yield Comparison(
                        use.input, written, value, node.lineno, text, use.index, use.modulus
                    )
                break

    def together(self, blocks: Collection[str] = ()) -> tuple[tuple[tuple[str, str], int], ...]:
        """Inputs that meet in one condition; and an input of `blocks` meets every input of the
        conditions inside an `if` on it (`if inference_params is not None:` holds TE's whole
        KV-cache section, each filter in it on one more input: its cuDNN range, context
        parallelism, FP8), as if the two were one condition."""
        met: dict[tuple[str, str], int] = {}

        def meet(inputs: Collection[str], line: int) -> None:
            ordered = sorted(inputs)
            for position, first in enumerate(ordered):
                for second in ordered[position + 1 :]:
                    met.setdefault((first, second), line)

        for function in self.functions:
            for node in ast.walk(function):
                if not isinstance(node, (ast.If, ast.While, ast.IfExp, ast.Assert)):
                    continue
                inputs = self._inputs(node.test)
                meet(inputs, node.lineno)
                outer = inputs & set(blocks)
                if not (outer and isinstance(node, ast.If)):
                    continue
                for statement in node.body:
                    for inner in ast.walk(statement):
                        if isinstance(inner, (ast.If, ast.While, ast.IfExp, ast.Assert)):
                            for name in outer:
                                meet({name, *self._inputs(inner.test)}, node.lineno)
        return tuple(sorted(met.items()))

    def _inputs(self, test: ast.expr) -> set[str]:
        return {use.input for part in ast.walk(test) for use in self.uses(part)}

    def truth_tested(self) -> frozenset[str]:
        tested = set()
        for function in self.functions:
            for node in ast.walk(function):
                if isinstance(node, (ast.If, ast.While, ast.IfExp, ast.Assert)):
                    conditions = [node.test]
                elif isinstance(node, ast.BoolOp):
                    conditions = list(node.values)
                elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
                    conditions = [node.operand]
                else:
                    continue
                for condition in conditions:
                    for use in self.uses(condition):
                        if use.index is None and use.modulus is None:
                            tested.add(use.input)
        return frozenset(tested)

    def env(self) -> dict[str, str | None]:
        """`NVTE_*` reads that decide something: not those stored for the log only
        (`run_config["NVTE_FP8_DPA_BWD"] = int(os.environ.get(...))`)."""
        read: dict[str, str | None] = {}
        for function in self.functions:
            for statement in ast.walk(function):
                if not isinstance(statement, ast.stmt) or _logs_only(statement):
                    continue
                for node in _own_expressions(statement):
                    found = _env_read(node)
                    if found is not None:
                        read.setdefault(*found)
        return read


class _NotConstant:
    def __repr__(self) -> str:
        return "<not a constant>"


_NOT_CONSTANT = _NotConstant()


def _frozen(value: object) -> object:
    """Lists and sets as tuples (a set in source order is no order: sorted by `repr`)."""
    if isinstance(value, (set, frozenset)):
        return tuple(sorted((_frozen(item) for item in value), key=repr))
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(item) for item in value)
    return value


def _dotted(node: ast.AST) -> bool:
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name)


def _arguments(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.arg]:
    arguments = function.args
    return [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]


def _targets(node: ast.AST) -> Iterator[ast.Name]:
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    for target in targets:
        for name in ast.walk(target):
            if isinstance(name, ast.Name):
                yield name


def _logs_only(statement: ast.stmt) -> bool:
    """An assignment into a subscript (the run config TE logs) or a bare call (a log line)."""
    if isinstance(statement, ast.Assign):
        return all(isinstance(target, ast.Subscript) for target in statement.targets)
    return isinstance(statement, ast.Expr)


def _own_expressions(statement: ast.stmt) -> Iterator[ast.AST]:
    """The expression nodes of `statement` itself, not of the statements nested in it."""
    pending = [
        child for child in ast.iter_child_nodes(statement) if not isinstance(child, ast.stmt)
    ]
    while pending:
        node = pending.pop()
        yield node
        pending.extend(
            child for child in ast.iter_child_nodes(node) if not isinstance(child, ast.stmt)
        )


def read(
    tree: ast.Module,
    *,
    params_dialect: bool,
    named: Mapping[str, str] | None = None,
    selector: str = SELECTOR,
    blocks: Collection[str] = (),
) -> Reading:
    """The comparisons of `selector` (and what it calls) in `tree`.

    `params_dialect`: the selector takes one `AttentionParams` (TE 1.9+) rather than keyword
    parameters. `named`: expressions that hold an input although they are no local of the
    selector (`FlashAttentionUtils.fa4_version`, by the input's name). Raises `ValueError` when
    the module defines no `selector`. `blocks`: inputs whose `if` meets every condition inside
    it (`_Reader.together`).
    """
    reader = _Reader(tree, selector, params_dialect, named or {})
    return Reading(
        tuple(reader.comparisons()), reader.truth_tested(), reader.env(), reader.together(blocks)
    )
