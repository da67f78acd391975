"""TE's calls into each kernel, read from TE's own source: which kernel parameters it passes.

A kernel refusal on a parameter TE never passes cannot fire through TE, however the selector
filters; one TE passes as a constant fires, or not, with that constant. Both are facts about
TE's call, not about its selector, so they are read where TE calls the kernel: `backends.py`
(`attention.py` in TE 2.2, one directory up) and `context_parallel.py`, which TE's selector
admits for FA2, FA3 and FA4 alike.

TE binds the kernel's entry points to its own names at import (`from flash_attn.cute import
flash_attn_func as _flash_attn_func_v4`, then `flash_attn_func_v4 = no_torch_dynamo()(...)`),
picks one into a local (`func = flash_attn_func_v4`), and calls it with keyword dictionaries it
fills beforehand (`fa_4_optional_forward_kwargs["num_splits"] = num_splits`, then
`func(q, k, v, **fa_4_optional_forward_kwargs)`). Each alias is followed to the kernel name it
holds, and each `**dict` to the keys the calling function writes into it. A dictionary built
elsewhere (context parallelism passes `fa_forward_kwargs` down to helpers, and `**get_fa_args(...)`)
may carry any key the file writes into a dictionary outside another backend's branch: an
over-approximation, so that "never passed" is only said where no such key exists.

The calls of every backend are read; flash-attn-4's side asks its refusals through them
(`lint_plugin.mine.cute.reach`). The C++ side does not yet: what it leaves unmapped (flash-attn
2's FP16/BF16 checks) turns on TE inputs that TE does pass.
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass
from typing import Iterator, Mapping

from selector_patch.sources import SelectorSource, SourceError, read_text

#: The kernel module TE imports a backend's entry points from, per release family.
KERNEL_MODULES = {
    "flash_attn.cute": "FA4",
    "flash_attn.cute.interface": "FA4",
    "flash_attn.flash_attn_interface": "FA2",
    "flash_attn_2_cuda": "FA2",
    "flash_attn_interface": "FA3",
    "flash_attn_3.flash_attn_interface": "FA3",
}
#: TE's files that call the kernels, beside its selector (`attention.py`: one level up, TE 2.2).
CALLER_FILES = ("backends.py", "context_parallel.py", "../attention.py")
#: The flag each backend's branch tests in TE's callers; FA2 is what is left when both are off.
BRANCH_FLAGS = {"FA3": "use_flash_attn_3", "FA4": "use_flash_attn_4"}
#: (backend, the kernel's name for the entry point): what a TE name may hold.
Entry = tuple[str, str]
#: A keyword TE passes whose value this reader does not know (from a dictionary built elsewhere).
UNKNOWN = ast.Name("<unknown>")


@dataclass(frozen=True)
class KernelCall:
    """One TE call of one kernel entry point."""

    backend: str
    #: The kernel's own name for what TE calls (`flash_attn_varlen_func`, `_flash_attn_fwd`).
    function: str
    #: TE's file, relative to the directory holding `transformer_engine/`, and the call's line.
    file: str
    line: int
    #: Kernel parameter -> TE's expression for it (`UNKNOWN` where a dictionary built elsewhere
    #: may carry it).
    keywords: Mapping[str, ast.expr]
    #: Positional arguments, in order, up to the first `*args` (whose length is not known).
    positional: tuple[ast.expr, ...]
    #: Whether positional arguments of unknown number follow (`*fa_optional_forward_args_thd`).
    starred: bool

    @property
    def site(self) -> str:
        return f"{self.file}:{self.line}"


def kernel_calls(source: SelectorSource) -> tuple[KernelCall, ...]:
    """Every call into a kernel in TE's caller files beside `source`'s selector, in file order.

    Files that do not exist in the release are skipped: which ones a release has is its layout.
    """
    directory = source.position.parent
    root = (source.root or directory).resolve()
    aliases: dict[str, frozenset[Entry]] = {}
    found = []
    for name in CALLER_FILES:
        path = (directory / name).resolve()
        if not path.is_file():
            continue
        try:
            module = ast.parse(read_text(path))
        except SyntaxError as error:
            raise SourceError(path, f"syntax error at line {error.lineno}: {error.msg}") from None
        aliases.update(_aliases(module, aliases))
        label = path.relative_to(root).as_posix() if path.is_relative_to(root) else path.name
        found += _calls(module, aliases, label)
    return tuple(found)


def _aliases(module: ast.Module, imported: Mapping[str, frozenset[Entry]]) -> dict:
    """TE's name -> every (backend, kernel function) it is bound to anywhere in the module.

    A name bound to an entry point in one function is taken to hold it wherever the module calls
    it, helpers that receive it as a parameter included (context parallelism's `flash_attn_fwd`,
    bound in the autograd forward and called in `cp_p2p_fwd_flash_attn`): more calls, never
    fewer. `imported` holds the aliases of files read before, for `from ...backends import
    _flash_attn_fwd_v4` inside functions.
    """
    aliases: dict[str, frozenset[Entry]] = {}
    for node in ast.walk(module):
        if isinstance(node, ast.ImportFrom) and node.module is not None:
            backend = KERNEL_MODULES.get(node.module)
            for alias in node.names:
                bound = alias.asname or alias.name
                if backend is not None:
                    aliases[bound] = aliases.get(bound, frozenset()) | {(backend, alias.name)}
                elif alias.name in imported:
                    aliases[bound] = aliases.get(bound, frozenset()) | imported[alias.name]
    # `flash_attn_func_v4 = no_torch_dynamo()(_flash_attn_func_v4)`: each name assignment and
    # the names its value reads, collected in one walk and gone over until nothing changes.
    assignments = [
        (node.targets[0].id, [n.id for n in ast.walk(node.value) if isinstance(n, ast.Name)])
        for node in ast.walk(module)
        if isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
    ]
    changed = True
    while changed:
        changed = False
        for target, read in assignments:
            held = frozenset().union(*(aliases[name] for name in read if name in aliases))
            if not held <= aliases.get(target, frozenset()):
                aliases[target] = aliases.get(target, frozenset()) | held
                changed = True
    return aliases


def _calls(module: ast.Module, aliases: Mapping[str, frozenset[Entry]], file: str) -> list:
    """The module's calls of names holding entry points, each for the backends whose branches
    it lies in (`func(...)` under `if use_flash_attn_4:` calls FA4's entry points only)."""
    found = []
    backends = sorted({backend for held in aliases.values() for backend, _ in held})
    for function in ast.walk(module):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for backend in backends:
            nodes = list(_taken(function.body, backend, nested=False))
            for call in nodes:
                if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)):
                    continue
                held = aliases.get(call.func.id, frozenset())
                for name in sorted(name for owner, name in held if owner == backend):
                    keywords = _keywords(call, nodes, module, backend)
                    positional, starred = _positional(call)
                    found.append(
                        KernelCall(backend, name, file, call.lineno, keywords, positional, starred)
                    )
    return sorted(found, key=lambda call: call.line)


def _positional(call: ast.Call) -> tuple[tuple[ast.expr, ...], bool]:
    before = []
    for argument in call.args:
        if isinstance(argument, ast.Starred):
            return tuple(before), True
        before.append(argument)
    return tuple(before), False


def _keywords(call: ast.Call, nodes: list[ast.AST], module: ast.Module, backend: str) -> dict:
    """Kernel parameter -> TE's expression, `**dict`s followed to the keys written into them."""
    keywords: dict[str, ast.expr] = {}
    for keyword in call.keywords:
        if keyword.arg is not None:
            keywords[keyword.arg] = keyword.value
        elif isinstance(keyword.value, ast.Name) and _assigned_here(keyword.value.id, nodes):
            keywords.update(_dict_keys(keyword.value.id, nodes))
        else:
            for key in _any_dict_keys(module, backend):
                keywords.setdefault(key, UNKNOWN)
    return keywords


def _assigned_here(name: str, nodes: list[ast.AST]) -> bool:
    return any(
        isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == name for t in node.targets)
        for node in nodes
    )


def _dict_keys(name: str, nodes: list[ast.AST]) -> dict[str, ast.expr]:
    """The keys written into the dictionary `name` among `nodes`: its literal, `name[k] = v`."""
    keys: dict[str, ast.expr] = {}
    for node in nodes:
        if not isinstance(node, ast.Assign):
            continue
        for target in node.targets:
            if isinstance(target, ast.Name) and target.id == name:
                if isinstance(node.value, ast.Dict):
                    keys.update(_literal_items(node.value))
            elif _subscript_of(target, name) is not None:
                keys[_subscript_of(target, name)] = node.value
    return keys


def _subscript_of(target: ast.expr, name: str) -> str | None:
    if (
        isinstance(target, ast.Subscript)
        and isinstance(target.value, ast.Name)
        and target.value.id == name
        and isinstance(target.slice, ast.Constant)
        and isinstance(target.slice.value, str)
    ):
        return target.slice.value
    return None


def _literal_items(literal: ast.Dict) -> dict[str, ast.expr]:
    return {
        key.value: value
        for key, value in zip(literal.keys, literal.values)
        if isinstance(key, ast.Constant) and isinstance(key.value, str)
    }


@functools.lru_cache(maxsize=8)
def _any_dict_keys(module: ast.Module, backend: str) -> frozenset[str]:
    """Every string key the module writes into a dictionary (a literal, `d[key] = ...`,
    `d.update(key=...)`) outside the branches of the other backends (a walk of the whole
    module, once per module and backend: every `**dict` built elsewhere asks it)."""
    keys: set[str] = set()
    for node in _taken(module.body, backend, nested=True):
        if isinstance(node, ast.Dict):
            keys |= set(_literal_items(node))
        elif isinstance(node, ast.Assign):
            keys |= {
                key
                for target in node.targets
                if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name)
                if (key := _subscript_of(target, target.value.id)) is not None
            }
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "update"
        ):
            keys |= {keyword.arg for keyword in node.keywords if keyword.arg is not None}
    return frozenset(keys)


def _taken(body: list[ast.stmt], backend: str, nested: bool) -> Iterator[ast.AST]:
    """The nodes of `body` that `backend` may run, leaving out the branches only another
    backend takes; with `nested`, the bodies of nested functions and classes too."""
    for stmt in body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if nested:
                yield from _taken(stmt.body, backend, nested)
            continue
        if isinstance(stmt, ast.If):
            yield from ast.walk(stmt.test)
            taken, other = _branch_owner(stmt.test, backend)
            if taken:
                yield from _taken(stmt.body, backend, nested)
            if other:
                yield from _taken(stmt.orelse, backend, nested)
            continue
        yield stmt
        for _, value in ast.iter_fields(stmt):
            items = value if isinstance(value, list) else [value]
            if items and isinstance(items[0], ast.stmt):
                yield from _taken(items, backend, nested)
                continue
            for item in items:
                if isinstance(item, ast.excepthandler):
                    yield from _taken(item.body, backend, nested)
                elif isinstance(item, ast.AST):
                    yield from ast.walk(item)


def _branch_owner(test: ast.expr, backend: str) -> tuple[bool, bool]:
    """Whether `backend` may take the body, and the else, of `if test:`.

    A test over the backend flags alone (`use_flash_attn_4`, `not use_flash_attn_3`,
    `ctx.use_flash_attn_3 or ctx.use_flash_attn_4`) is decided for `backend`, whose own flag is the
    only one set; any other test may go either way.
    """
    truth = _flag_truth(test, backend)
    return (True, True) if truth is None else (truth, not truth)


def _flag_truth(test: ast.expr, backend: str) -> bool | None:
    """The flag test's truth for `backend` (`ctx.use_flash_attn_4` is the flag too)."""
    flag = test.id if isinstance(test, ast.Name) else getattr(test, "attr", None)
    if flag in BRANCH_FLAGS.values():
        return BRANCH_FLAGS.get(backend) == flag
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = _flag_truth(test.operand, backend)
        return None if inner is None else not inner
    if isinstance(test, ast.BoolOp):
        truths = [_flag_truth(value, backend) for value in test.values]
        if None in truths:
            return None
        return any(truths) if isinstance(test.op, ast.Or) else all(truths)
    return None
