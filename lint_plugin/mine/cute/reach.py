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
forwarded `qv`.

That is an assumption about the wrappers, and it is where this reading stops: a wrapper that
rebinds a parameter before passing it on is not followed (4.0.0b36's `FlashAttnFunc.forward`
sets `qv = q` for shared-KV MLA, `k is v` with head_dim_v 512, which TE's distinct key and value
tensors never are). Only parameters of the entry points are fixed: a helper's parameter that no
entry point takes (`accum_order`) is the kernel's own business. In a function that reassigns it
(`softcap = None`) a parameter is not a pure parameter and is left free there, except through
`maybe_contiguous`, which FA4 uses to make tensors contiguous and which returns None for None; so
is a parameter a call may pass positionally where the position is not known.
"""

from __future__ import annotations

import ast
from collections import Counter
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from lint_plugin.mine.cute.kernel import BACKEND
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

    def describe(self, name: str) -> str:
        """`mask_mod` is None (TE never passes it), `window_size_left=-1` (TE passes it)."""
        how = "TE never passes it" if self.defaulted else "TE passes it"
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
        for entry in {call.function for call in self._calls}:
            for function in _reachable(graph, self._functions[entry]):
                self._reached_from.setdefault(id(function), set()).add(entry)
        self._classes = [node for node in ast.walk(module) if isinstance(node, ast.ClassDef)]

    def in_function(self, function: ast.FunctionDef) -> dict[str, Fixed]:
        """The parameters of `function` that every TE call reaching it fixes, and that it does
        not reassign; in an autograd `backward`, also the tensors its `forward` saved fixed."""
        reassigned = _reassigned(function)
        forwarded = {
            name: fixed
            for name, fixed in self._forwarded(function).items()
            if name not in reassigned
        }
        return {**forwarded, **self._saved(function)}

    def _forwarded(self, function: ast.FunctionDef) -> dict[str, Fixed]:
        """What each parameter of `function` holds when forwarded by name from the entry points
        TE calls that reach it, where that is one constant."""
        entries = self._reached_from.get(id(function), set())
        calls = [call for call in self._calls if call.function in entries]
        entry_parameters = {a.arg for name in entries for a in _arguments(self._functions[name])}
        defaults = _defaults(function)
        sites = tuple(dict.fromkeys(call.site for call in calls))
        fixed = {}
        for argument in _arguments(function):
            name = argument.arg
            if name not in entry_parameters:
                continue
            value = _one_value(name, defaults.get(name, FREE), calls, self._functions)
            if value is not FREE:
                fixed[name] = Fixed(value[0], value[1], sites)
        return fixed

    def _saved(self, backward: ast.FunctionDef) -> dict[str, Fixed]:
        """`q, k, v, qv, ... = ctx.saved_tensors` in an autograd backward: each name holds what
        the forward passed `ctx.save_for_backward` at its position, fixed where that is
        forwarded by name (as the forward's callees see it)."""
        owner = next((c for c in self._classes if backward in c.body), None)
        forward = next(
            (f for f in (owner.body if owner else ()) if getattr(f, "name", "") == "forward"), None
        )
        if backward.name != "backward" or forward is None:
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
        forward_fixed = self._forwarded(forward)
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


def _one_value(
    name: str,
    own_default: Any,
    calls: Sequence[KernelCall],
    functions: Mapping[str, ast.FunctionDef],
) -> tuple[Any, bool] | Any:
    """(the value, whether it is a default) when every call gives `name` one constant; FREE
    otherwise."""
    values = set()
    passed = False
    for call in calls:
        entry = functions[call.function]
        parameters = [a.arg for a in (*entry.args.posonlyargs, *entry.args.args)]
        if name in call.keywords:
            value, passed = _constant(call.keywords[name]), True
        elif name in parameters and parameters.index(name) < len(call.positional):
            value, passed = _constant(call.positional[parameters.index(name)]), True
        elif name in parameters and call.starred:
            value = FREE
        elif name in parameters or name in _kwonly(entry):
            value = _defaults(entry).get(name, FREE)
        else:
            value = own_default
        if value is FREE:
            return FREE
        values.add(repr(value))
        if len(values) > 1:
            return FREE
    return (value, not passed) if values else FREE


def _kwonly(function: ast.FunctionDef) -> list[str]:
    return [a.arg for a in function.args.kwonlyargs]


def _arguments(function: ast.FunctionDef) -> list[ast.arg]:
    arguments = function.args
    return [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]


def _store_counts(function: ast.FunctionDef) -> Counter[str]:
    return Counter(
        node.id
        for node in ast.walk(function)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)
    )


def _reassigned(function: ast.FunctionDef) -> set[str]:
    """Names `function` stores to, other than by `x = maybe_contiguous(x, ...)` or
    `a, b = [maybe_contiguous(t) for t in (a, b)]`."""
    preserving = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            preserving |= _preserved(node.targets[0], node.value)
    return {
        node.id
        for node in ast.walk(function)
        if isinstance(node, ast.Name)
        and isinstance(node.ctx, ast.Store)
        and id(node) not in preserving
    }


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
