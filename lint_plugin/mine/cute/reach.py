"""What TE's calls leave fixed in flash-attn-4: parameters it never passes, or passes as constants.

TE calls FA4's entry points (`flash_attn_func`, `flash_attn_varlen_func`, `_flash_attn_fwd` and
`_flash_attn_bwd` from context parallelism; `lint_plugin.mine.te_calls`). FA4's wrappers forward
their parameters by name, down to the functions that refuse (`flash_attn_func` ->
`FlashAttnFunc.apply` -> `forward` -> `_flash_attn_fwd(..., mask_mod=mask_mod, ...)`). So a
parameter of a module function that the entry points reaching it (through calls by name and
`Function.apply`) take holds, on every TE call, one of: what TE passes for it, the entry point's
default where TE passes nothing, or the function's own default where the entry point TE called
has no such parameter (a wrapper cannot forward what it does not take). Where all of these are
one constant, the parameter is fixed to it: `mask_mod` is None, `softcap` 0.0. An autograd
`backward` sees what its `forward` saved: `q, k, v, qv, ... = ctx.saved_tensors` holds the
forwarded `qv`, and a gradient it drops under a `ctx` flag (`if not ctx.return_lse: dlse = None`,
the forward having set `ctx.return_lse = return_lse`) is None where TE's calls leave that flag's
parameter falsy: `_flash_attn_bwd`'s `dlse` when TE never passes `return_lse`.

That is an assumption about the wrappers, and it is where this reading stops: a wrapper that
rebinds a parameter before passing it on is not followed (4.0.0b36's `FlashAttnFunc.forward`
sets `qv = q` for shared-KV MLA, `k is v` with head_dim_v 512, which TE's distinct key and value
tensors never are). Only parameters of the entry points are fixed: a helper's parameter that no
entry point takes (`accum_order`) is the kernel's own business. In a function that reassigns it
(`softcap = score_mod_softcap(...)`) a parameter is not a pure parameter and is left free there,
except through `maybe_contiguous`, which FA4 uses to make tensors contiguous and which returns
None for None, and through normalizations at the top of the function (`if softcap == 0.0:
softcap = None`), which are applied to the fixed value; so is a parameter a call may pass
positionally where the position is not known.
"""

from __future__ import annotations

import ast
import functools
from collections import Counter
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from lint_plugin.mine.cute.kernel import BACKEND, FUNCTION_CACHE, MODULE_CACHE
from lint_plugin.mine.te_calls import KernelCall

#: Marks a value that is not one constant.
FREE = object()
#: FA4 helpers that return None for None (`maybe_contiguous(x)`: `x.contiguous()` or `x`).
NONE_PRESERVING = ("maybe_contiguous",)


@dataclass(frozen=True)
class Fixed:
    """A kernel parameter with one value on every TE call, and the calls that say so."""

    value: Any
    #: True when TE never passes it (the value is a default), False when TE passes the constant.
    defaulted: bool
    calls: tuple[str, ...]
    #: What TE's calls give where the kernel normalizes that first (`softcap` 0.0 to None).
    given: tuple[Any, ...] = ()
    #: How an autograd `backward` comes to pass it (`dlse`: `ctx.return_lse` is False).
    via: str = ""

    def describe(self, name: str) -> str:
        """`mask_mod` is None (TE never passes it), `window_size_left=-1` (TE passes it)."""
        how = "TE never passes it" if self.defaulted else "TE passes it"
        if self.via:
            how = self.via
        if self.given:
            before = " or ".join(repr(value) for value in self.given)
            how += f": {before}, which the kernel turns into {self.value!r}"
        return f"`{name}` is {self.value!r} ({how})"


def unreachable_reason(fixed: Mapping[str, Fixed]) -> str:
    """Why a refusal cannot fire through TE: the fixed parameters, then TE's calls that fix them."""
    sites = dict.fromkeys(site for one in fixed.values() for site in one.calls)
    said = "; ".join(one.describe(name) for name, one in fixed.items())
    return f"{said}, on every TE call into flash-attn-4 that reaches it ({', '.join(sites)})"


class TeValues:
    """The parameters TE's calls fix in one kernel module, by function."""

    def __init__(self, module: ast.Module, calls: Sequence[KernelCall]) -> None:
        self._functions = {
            node.name: node for node in module.body if isinstance(node, ast.FunctionDef)
        }
        self._calls = [c for c in calls if c.backend == BACKEND and c.function in self._functions]
        #: Whether TE's calls enter the kernel here; None when no TE call of FA4 is known.
        self.entered = bool(self._calls) if any(c.backend == BACKEND for c in calls) else None
        #: Where TE's calls enter the kernel, wherever that is.
        self.entries = tuple(
            dict.fromkeys(f"{c.function} ({c.site})" for c in calls if c.backend == BACKEND)
        )
        graph = _call_graph(module)
        #: id of a function -> the entry points TE calls that reach it.
        self._reached_from: dict[int, set[str]] = {}
        #: The functions TE's calls reach, by id.
        self._reached: dict[int, ast.FunctionDef] = {}
        for entry in {call.function for call in self._calls}:
            for function in _reachable(graph, self._functions[entry]):
                self._reached_from.setdefault(id(function), set()).add(entry)
                self._reached[id(function)] = function
        self._classes = _classes(module)

    def reaches(self, function: ast.FunctionDef) -> bool:
        """Whether some TE call reaches `function` (through calls by name and `.apply`)."""
        return id(function) in self._reached

    def in_function(self, function: ast.FunctionDef) -> dict[str, Fixed]:
        """The parameters of `function` that every TE call reaching it fixes, after the
        function's own normalizations of them; in an autograd `backward`, also the tensors its
        `forward` saved fixed."""
        return {
            **self._gated(function),
            **self._forwarded(function, normalize=True),
            **self._saved(function),
        }

    def _forwarded(self, function: ast.FunctionDef, normalize: bool) -> dict[str, Fixed]:
        """What each parameter of `function` holds when forwarded by name from the entry points
        TE calls that reach it, where that is one constant (with `normalize`, as the function
        goes on to use it: a reassigned parameter is free unless only normalized)."""
        entries = self._reached_from.get(id(function), set())
        calls = [call for call in self._calls if call.function in entries]
        entry_parameters = {a.arg for name in entries for a in _arguments(self._functions[name])}
        defaults = _defaults(function)
        reassigned = _reassigned(function) if normalize else set()
        sites = tuple(dict.fromkeys(call.site for call in calls))
        fixed = {}
        for argument in _arguments(function):
            name = argument.arg
            if name not in entry_parameters or not calls:
                continue
            given = [_given(name, defaults.get(name, FREE), c, self._functions) for c in calls]
            values = [
                _normalized(function, name, value) if name in reassigned else value
                for value, _ in given
            ]
            if any(value is FREE for value in values) or len({repr(v) for v in values}) > 1:
                continue
            before = tuple(dict.fromkeys(value for value, _ in given if value != values[0]))
            passed = any(passed for _, passed in given)
            fixed[name] = Fixed(values[0], not passed, sites, before)
        return fixed

    def _gated(self, function: ast.FunctionDef) -> dict[str, Fixed]:
        """Parameters of `function` no entry point takes, which every call reaching it passes
        from an autograd `backward`'s gated gradient: `if not ctx.return_lse: dlse = None` in
        the backward, `ctx.return_lse = return_lse` in its forward, where TE's calls fix
        `return_lse` to a falsy constant; `dlse` is None there."""
        entries = self._reached_from.get(id(function), set())
        entry_parameters = {a.arg for name in entries for a in _arguments(self._functions[name])}
        callers = [
            (caller, call)
            for caller in self._reached.values()
            for call in _calls_by_name(caller).get(function.name, ())
        ]
        fixed = {}
        for argument in _arguments(function):
            name = argument.arg
            if name in entry_parameters or not callers:
                continue
            gated = [self._gate(caller, call, name) for caller, call in callers]
            if all(gate is not None for gate in gated):
                fixed[name] = gated[0]
        return fixed

    def _gate(self, backward: ast.FunctionDef, call: ast.Call, name: str) -> Fixed | None:
        """What `call` in `backward` passes for `name`, where that is a local the backward sets
        to None under a `ctx` flag its forward sets from a falsy fixed parameter; else None."""
        passed = next((k.value for k in call.keywords if k.arg == name), None)
        forward = self._forward_of(backward)
        if not isinstance(passed, ast.Name) or forward is None:
            return None
        local = passed.id
        gates = [
            stmt.test.operand
            for stmt in backward.body
            if isinstance(stmt, ast.If)
            and not stmt.orelse
            and isinstance(stmt.test, ast.UnaryOp)
            and isinstance(stmt.test.op, ast.Not)
            and _is_ctx_attribute(stmt.test.operand)
            and [ast.unparse(b) for b in stmt.body] == [f"{local} = None"]
        ]
        if len(gates) != 1 or _store_counts(backward)[local] != 1:
            return None
        flag = gates[0].attr
        sources = [
            node.value.id
            for node in ast.walk(forward)
            if isinstance(node, ast.Assign)
            and [ast.unparse(t) for t in node.targets] == [f"ctx.{flag}"]
            and isinstance(node.value, ast.Name)
        ]
        forward_fixed = self._forwarded(forward, normalize=False)
        if len(sources) != 1 or sources[0] not in forward_fixed:
            return None
        source = forward_fixed[sources[0]]
        if source.value:
            return None
        how = "TE never passes it" if source.defaulted else f"TE passes {source.value!r}"
        via = (
            f"{backward.name} sets it to None: `ctx.{flag}` holds `{sources[0]}`, which is"
            f" {source.value!r} ({how})"
        )
        return Fixed(None, True, source.calls, via=via)

    def _forward_of(self, backward: ast.FunctionDef) -> ast.FunctionDef | None:
        """The `forward` of the autograd Function whose `backward` this is."""
        owner = next((c for c in self._classes if backward in c.body), None)
        if backward.name != "backward" or owner is None:
            return None
        return next((f for f in owner.body if getattr(f, "name", "") == "forward"), None)

    def _saved(self, backward: ast.FunctionDef) -> dict[str, Fixed]:
        """`q, k, v, qv, ... = ctx.saved_tensors` in an autograd backward: each name holds what
        the forward passed `ctx.save_for_backward` at its position, fixed where that is
        forwarded by name (as the forward's callees see it)."""
        forward = self._forward_of(backward)
        if forward is None:
            return {}
        saved = next(
            (
                call.args
                for call in ast.walk(forward)
                if isinstance(call, ast.Call)
                and isinstance(call.func, ast.Attribute)
                and call.func.attr == "save_for_backward"
            ),
            None,
        )
        unpacked = next(
            (
                node.targets[0].elts
                for node in ast.walk(backward)
                if isinstance(node, ast.Assign)
                and isinstance(node.targets[0], ast.Tuple)
                and isinstance(node.value, ast.Attribute)
                and node.value.attr == "saved_tensors"
            ),
            None,
        )
        if saved is None or unpacked is None:
            return {}
        forward_fixed = self._forwarded(forward, normalize=False)
        stores = _store_counts(backward)
        found = {}
        for source, target in zip(saved, unpacked):
            if isinstance(source, ast.Starred) or isinstance(target, ast.Starred):
                break
            if (
                isinstance(source, ast.Name)
                and isinstance(target, ast.Name)
                and source.id in forward_fixed
                and stores[target.id] == 1
            ):
                found[target.id] = forward_fixed[source.id]
        return found


def _is_ctx_attribute(node: ast.expr) -> bool:
    """`ctx.return_lse`: an attribute of an autograd Function's context."""
    return (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "ctx"
    )


@functools.lru_cache(maxsize=MODULE_CACHE)
def _classes(module: ast.Module) -> tuple[ast.ClassDef, ...]:
    return tuple(node for node in ast.walk(module) if isinstance(node, ast.ClassDef))


@functools.lru_cache(maxsize=FUNCTION_CACHE)
def _calls_by_name(function: ast.FunctionDef) -> dict[str, tuple[ast.Call, ...]]:
    """Name -> the calls of it by plain name in `function` (nested functions included), in
    `ast.walk` order."""
    calls: dict[str, list[ast.Call]] = {}
    for call in ast.walk(function):
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Name):
            calls.setdefault(call.func.id, []).append(call)
    return {name: tuple(found) for name, found in calls.items()}


@functools.lru_cache(maxsize=MODULE_CACHE)
def _call_graph(module: ast.Module) -> dict[int, list[ast.FunctionDef]]:
    """id of each function -> the module's functions it calls: by plain name (`_flash_attn_fwd(`),
    and an autograd Function's `forward` and `backward` for `FlashAttnFunc.apply(`."""
    top = {node.name: node for node in module.body if isinstance(node, ast.FunctionDef)}
    methods = {
        node.name: {m.name: m for m in node.body if isinstance(m, ast.FunctionDef)}
        for node in module.body
        if isinstance(node, ast.ClassDef)
    }
    graph: dict[int, list[ast.FunctionDef]] = {}
    for function in [*top.values(), *(m for c in methods.values() for m in c.values())]:
        callees = []
        for call in ast.walk(function):
            if not isinstance(call, ast.Call):
                continue
            callee = call.func
            if isinstance(callee, ast.Name) and callee.id in top:
                callees.append(top[callee.id])
            elif (
                isinstance(callee, ast.Attribute)
                and callee.attr == "apply"
                and isinstance(callee.value, ast.Name)
                and callee.value.id in methods
            ):
                own = methods[callee.value.id]
                callees += [own[name] for name in ("forward", "backward") if name in own]
        graph[id(function)] = callees
    return graph


def _reachable(
    graph: Mapping[int, list[ast.FunctionDef]], entry: ast.FunctionDef
) -> list[ast.FunctionDef]:
    found = {id(entry): entry}
    pending = [entry]
    while pending:
        for callee in graph.get(id(pending.pop()), ()):
            if id(callee) not in found:
                found[id(callee)] = callee
                pending.append(callee)
    return list(found.values())


def _given(
    name: str, own_default: Any, call: KernelCall, functions: Mapping[str, ast.FunctionDef]
) -> tuple[Any, bool]:
    """What one TE call gives parameter `name` (FREE where that is not a constant), and whether
    TE passes it rather than leaving a default."""
    entry = functions[call.function]
    parameters = [a.arg for a in (*entry.args.posonlyargs, *entry.args.args)]
    if name in call.keywords:
        return _constant(call.keywords[name]), True
    if name in parameters and parameters.index(name) < len(call.positional):
        return _constant(call.positional[parameters.index(name)]), True
    if name in parameters and call.starred:
        return FREE, True
    if name in parameters or name in _kwonly(entry):
        return _defaults(entry).get(name, FREE), False
    return own_default, False


def _kwonly(function: ast.FunctionDef) -> list[str]:
    return [a.arg for a in function.args.kwonlyargs]


def _arguments(function: ast.FunctionDef) -> list[ast.arg]:
    arguments = function.args
    return [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]


def _normalized(function: ast.FunctionDef, name: str, value: Any) -> Any:
    """The value after the function's own normalizations of it, where those are all its stores:
    statements of its body like `if softcap == 0.0: softcap = None`; FREE where it stores the
    name otherwise."""
    normalizations = [
        stmt
        for stmt in function.body
        if isinstance(stmt, ast.If)
        and not stmt.orelse
        and len(stmt.body) == 1
        and isinstance(stmt.body[0], ast.Assign)
        and [getattr(t, "id", None) for t in stmt.body[0].targets] == [name]
    ]
    if value is FREE or _store_counts(function)[name] != len(normalizations):
        return FREE
    for stmt in normalizations:
        holds = _compares(stmt.test, name, value)
        assigned = _constant(stmt.body[0].value)
        if holds is None or assigned is FREE:
            return FREE
        if holds:
            value = assigned
    return value


def _compares(test: ast.expr, name: str, value: Any) -> bool | None:
    """The truth of `name == 0.0`, `name is None` and the like with `name` holding `value`;
    None for any other test."""
    if not (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.left, ast.Name)
        and test.left.id == name
    ):
        return None
    other = _constant(test.comparators[0])
    if other is FREE:
        return None
    operations = {
        ast.Eq: lambda a, b: a == b,
        ast.NotEq: lambda a, b: a != b,
        ast.Is: lambda a, b: a is b,
        ast.IsNot: lambda a, b: a is not b,
    }
    operation = operations.get(type(test.ops[0]))
    return None if operation is None else operation(value, other)


@functools.lru_cache(maxsize=FUNCTION_CACHE)
def _store_counts(function: ast.FunctionDef) -> Counter[str]:
    return Counter(
        node.id
        for node in ast.walk(function)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)
    )


@functools.lru_cache(maxsize=FUNCTION_CACHE)
def _reassigned(function: ast.FunctionDef) -> frozenset[str]:
    """Names `function` stores to, other than by `x = maybe_contiguous(x, ...)` or
    `a, b = [maybe_contiguous(t) for t in (a, b)]`."""
    preserving = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            preserving |= _preserved(node.targets[0], node.value)
    return frozenset(
        node.id
        for node in ast.walk(function)
        if isinstance(node, ast.Name)
        and isinstance(node.ctx, ast.Store)
        and id(node) not in preserving
    )


def _preserved(target: ast.expr, value: ast.expr) -> set[int]:
    """Ids of the target names an assignment only passes through a None-preserving helper."""
    if isinstance(target, ast.Name) and _preserving_call(value, target.id):
        return {id(target)}
    if (
        isinstance(target, ast.Tuple)
        and isinstance(value, ast.ListComp)
        and len(value.generators) == 1
        and isinstance(value.generators[0].target, ast.Name)
        and isinstance(value.generators[0].iter, ast.Tuple)
        and _preserving_call(value.elt, value.generators[0].target.id)
    ):
        sources = [getattr(e, "id", None) for e in value.generators[0].iter.elts]
        names = [getattr(e, "id", None) for e in target.elts]
        if names == sources:
            return {id(e) for e in target.elts}
    return set()


def _preserving_call(value: ast.expr, name: str) -> bool:
    return (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and value.func.id in NONE_PRESERVING
        and bool(value.args)
        and isinstance(value.args[0], ast.Name)
        and value.args[0].id == name
    )


def _defaults(function: ast.FunctionDef) -> dict[str, Any]:
    """Parameter -> its default where that is a literal (FREE for any other default)."""
    arguments = function.args
    positional = [*arguments.posonlyargs, *arguments.args]
    pairs = list(zip(positional[len(positional) - len(arguments.defaults) :], arguments.defaults))
    pairs += [(a, d) for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults) if d is not None]
    return {argument.arg: _constant(default) for argument, default in pairs}


def _constant(node: ast.expr) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return FREE
