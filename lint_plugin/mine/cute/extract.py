"""Every architecture-conditioned refusal in a kernel module, found in its AST.

A refusal is an `assert` or a `raise`. It is architecture-conditioned when the arch decides it:
it sits lexically under a branch whose test depends on the arch (`if arch // 10 == 12:`,
`elif arch // 10 in [10, 11]:`, the `else` of such a chain), or it is an `assert` whose own
test depends on it (`assert arch // 10 in [9, 10, 11], "..."`). "Depends" is semantic: the
test's truth differs between two architectures of `ARCHITECTURES` with everything else unknown.

What is known to hold at a statement is its path: the enclosing branches, plus the tests of
earlier `assert`s in the same blocks and the negated tests of earlier `if ...: raise` (early
exits). The path narrows the arch set (after `assert arch // 10 in [9, 10, 11, 12]`, a later
refusal under `if learnable_sink is not None:` can only fire on 12.x) but does not by itself
make a refusal architecture-conditioned; otherwise every check after that first assert would be.

Its own condition is its test (for an assert) and the enclosing branches nested inside the
innermost one that depends on the arch: `if arch // 10 in [10, 11]: ... if needs_2cta is not
None and not use_2cta_instrs: raise ...` refuses only when `needs_2cta ...` holds. Branches
further out (`if compile_key not in cache:`) only say that some call reaches it.

A private function is entered through its calls in the module (one level up): its refusals
also need one of those call sites' paths to be open, so the checks of
`_flash_attn_bwd_sparse_mla`, called only under `if qv is not None:`, need `qv`. A public
function, or a private one the module never calls by name, is entered from outside.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any, Iterator, Mapping, Sequence

from lint_plugin.mine.cute.arch import forwarded_parameters
from lint_plugin.mine.cute.conditions import Scope, plain
from lint_plugin.mine.cute.kernel import MODULE_CACHE, parse
from lint_plugin.mine.cute.reach import Fixed, TeValues
from lint_plugin.mine.cute.switches import Switch
from lint_plugin.engine.program import blocks, heads
from lint_plugin.mine.devices import ARCHITECTURES, Arch
from lint_plugin.mine.findings import Site
from lint_plugin.mine.te_calls import KernelCall

#: Function, class or module names that mark backward code (`_flash_attn_bwd`, `backward`,
#: `FlashAttentionBackwardSm120`, `flash_bwd_postprocess.py`).
BACKWARD = re.compile(r"bwd|backward", re.IGNORECASE)


@dataclass(frozen=True)
class Branch:
    """One test on a path, and whether the path takes it where the test is true."""

    test: ast.expr
    holds: bool
    #: An enclosing `if` (True), or a fact from an earlier assert or early exit (False).
    enclosing: bool = True

    @property
    def source(self) -> str:
        text = ast.unparse(self.test)
        return text if self.holds else f"not ({text})"


def _and(*truths: bool | None) -> bool | None:
    """Three-valued conjunction: False wins, then unknown."""
    if False in truths:
        return False
    return None if None in truths else True


def _or(*truths: bool | None) -> bool | None:
    """Three-valued disjunction: True wins, then unknown."""
    if True in truths:
        return True
    return None if None in truths else False


@dataclass(frozen=True)
class Route:
    """The branches on the way to a statement of one function, outermost first."""

    branches: tuple[Branch, ...]
    scope: Scope

    def truth(
        self, arch: Arch, bindings: Mapping[str, Any], through_te: bool = False
    ) -> bool | None:
        """True if it is taken, False if a test rules it out, None if unknown names decide."""
        truths = [self.scope.truth(b.test, arch, bindings, through_te) for b in self.branches]
        return _and(*(None if t is None else t is b.holds for t, b in zip(truths, self.branches)))


@dataclass(frozen=True)
class Refusal:
    """An `assert` or `raise` the kernel runs only on some architectures."""

    #: `flash_attn/cute/interface.py`
    file: str
    line: int
    #: Enclosing function, qualified by its class (`FlashAttentionBackwardSm120.__init__`).
    function: str
    #: The statement, whitespace collapsed to one line.
    text: str
    message: str
    architectures: tuple[Arch, ...]
    backward: bool
    #: Its own condition, as the kernel writes it ("" for a raise straight under the branch).
    condition: str
    #: The innermost enclosing branch that depends on the arch ("" when its own test does).
    branch: str
    path: Route = field(repr=False, compare=False)
    #: An assert's own test (the refusal fires where it is false); None for a raise.
    test: ast.expr | None = field(repr=False, compare=False)
    #: Enclosing branches inside the innermost arch-dependent one: part of its own condition.
    local: tuple[Branch, ...] = field(repr=False, compare=False)
    #: The paths to the calls that enter the function; empty when it is entered from outside.
    callers: tuple[Route, ...] = field(repr=False, compare=False)
    #: Whether TE's calls enter the kernel in this module (None: TE's calls are not known),
    #: and where they enter it.
    entered: bool | None = field(default=None, repr=False, compare=False)
    entries: tuple[str, ...] = field(default=(), repr=False, compare=False)

    @property
    def site(self) -> Site:
        """The statement, as evidence and reports cite it."""
        return Site(
            file=self.file,
            line=self.line,
            function=self.function,
            text=self.text,
            message=self.message,
            backward=self.backward,
            condition=self.condition,
            branch=self.branch,
        )

    def reads(self) -> frozenset[str]:
        """Every name its paths and test read, arch names excepted."""
        paths = (self.path, *self.callers)
        tests = [(b.test, p.scope) for p in paths for b in p.branches]
        if self.test is not None:
            tests.append((self.test, self.path.scope))
        return frozenset().union(*(scope.names(test) for test, scope in tests))

    def own_names(self) -> frozenset[str]:
        """The names its own condition reads, arch names excepted."""
        tests = [b.test for b in self.local] + ([self.test] if self.test is not None else [])
        return frozenset().union(*(self.path.scope.names(test) for test in tests))

    def own_truth(
        self, arch: Arch, bindings: Mapping[str, Any], through_te: bool = False
    ) -> bool | None:
        """Whether its own condition refuses: the local branches hold and an assert's test fails."""
        local = Route(self.local, self.path.scope).truth(arch, bindings, through_te)
        if self.test is None:
            return local
        truth = self.path.scope.truth(self.test, arch, bindings, through_te)
        return _and(local, None if truth is None else not truth)

    def reachable(
        self, arch: Arch, bindings: Mapping[str, Any], through_te: bool = False
    ) -> bool | None:
        """Whether it is reached: its own path, and some caller's path when it has callers."""
        own = self.path.truth(arch, bindings, through_te)
        if not self.callers or own is False:
            return own
        callers = (caller.truth(arch, bindings, through_te) for caller in self.callers)
        return _and(own, _or(*callers))

    def may_fire(self, arch: Arch, bindings: Mapping[str, Any], through_te: bool = False) -> bool:
        """Whether some value of the unknown names makes it fire on `arch` with `bindings`."""
        return (
            self.reachable(arch, bindings, through_te) is not False
            and self.own_truth(arch, bindings, through_te) is not False
        )

    def switches_read(self) -> list[Switch]:
        """The environment switches its paths and test call."""
        paths = (self.path, *self.callers)
        tests = [(b.test, p.scope) for p in paths for b in p.branches]
        if self.test is not None:
            tests.append((self.test, self.path.scope))
        found = [switch for test, scope in tests for switch in scope.switches_read(test)]
        return list(dict.fromkeys(found))

    def fixed_reads(self) -> dict[str, Fixed]:
        """The parameters TE's calls fix among those its paths and test read."""
        paths = (self.path, *self.callers)
        tests = [(b.test, p.scope) for p in paths for b in p.branches]
        if self.test is not None:
            tests.append((self.test, self.path.scope))
        return {
            name: scope.fixed[name]
            for test, scope in tests
            for name in sorted(scope.names(test))
            if name in scope.fixed
        }


def refusals(
    source: str,
    file: str,
    calls: Sequence[KernelCall] = (),
    switches: Mapping[str, Switch] = {},
) -> list[Refusal]:
    """The architecture-conditioned refusals of one module, in source order; `calls` are TE's
    calls into the kernel, which fix some parameters (`Refusal.fixed_reads`), and in the
    functions they reach the kernel's environment `switches` hold their unset values.

    Only evaluations `through_te` read those: the refusals themselves, their paths and their
    architectures are the module's alone, found once per module (`_module_refusals`) and here
    given the scopes of TE's calls."""
    module = parse(source)
    te_values = TeValues(module, calls)
    scopes: dict[int, Scope] = {}

    def through_te(route: Route) -> Route:
        function = route.scope.function
        scope = scopes.get(id(function))
        if scope is None:
            scope = scopes[id(function)] = Scope(
                function,
                route.scope.forwarded,
                te_values.in_function(function),
                switches if te_values.reaches(function) else {},
            )
        return Route(route.branches, scope)

    return [
        dataclasses.replace(
            refusal,
            path=through_te(refusal.path),
            callers=tuple(through_te(caller) for caller in refusal.callers),
            entered=te_values.entered,
            entries=te_values.entries,
        )
        for refusal in _module_refusals(module, source, file)
    ]


@functools.lru_cache(maxsize=MODULE_CACHE)
def _module_refusals(module: ast.Module, source: str, file: str) -> tuple[Refusal, ...]:
    """The module's refusals, in source order, in scopes without TE's calls: a kernel release
    is mined through each TE release's calls, and this is all of the walk that does not
    depend on them."""
    forwarded = forwarded_parameters(module)
    walkers = [
        _Walker(source, file, function, qualname, forwarded.get(function.name, {}))
        for function, qualname in _functions(module.body, ())
    ]
    calls: dict[str, list[Route]] = {}
    for walker in walkers:
        for callee, path in walker.calls:
            calls.setdefault(callee, []).append(path)
    found = []
    for walker in walkers:
        name = walker.call_name
        callers = tuple(calls.get(name, ())) if name and name.startswith("_") else ()
        for refusal in walker.found:
            refusal = dataclasses.replace(refusal, callers=callers)
            architectures = tuple(arch for arch in ARCHITECTURES if refusal.may_fire(arch, {}))
            if architectures:
                found.append(dataclasses.replace(refusal, architectures=architectures))
    return tuple(sorted(found, key=lambda refusal: refusal.line))


def _functions(
    body: list[ast.stmt], prefix: tuple[str, ...]
) -> Iterator[tuple[ast.FunctionDef, str]]:
    """Every function and method, nested ones included, with its dotted qualified name."""
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node, ".".join((*prefix, node.name))
            yield from _functions(node.body, (*prefix, node.name))
        elif isinstance(node, ast.ClassDef):
            yield from _functions(node.body, (*prefix, node.name))
        else:
            for block in blocks(node):
                yield from _functions(block, prefix)


class _Walker:
    """The arch-conditioned refusals and the calls of one function body.

    Nested definitions are walked on their own.
    """

    def __init__(
        self,
        source: str,
        file: str,
        function: ast.FunctionDef,
        qualname: str,
        forwarded: Mapping[str, ast.expr],
    ) -> None:
        self.source = source
        self.file = file
        self.qualname = qualname
        self.scope = Scope(function, forwarded)
        self.backward = bool(BACKWARD.search(f"{PurePosixPath(file).stem}.{qualname}"))
        self.call_name = _call_name(qualname)
        self.found: list[Refusal] = []
        #: (callee name, path to the call) for every call by plain name.
        self.calls: list[tuple[str, Route]] = []
        self._block(function.body, ())

    def _block(self, body: list[ast.stmt], path: tuple[Branch, ...]) -> None:
        for stmt in body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            self._calls(heads(stmt) if blocks(stmt) else [stmt], path)
            if isinstance(stmt, ast.Assert):
                test = plain(stmt.test)
                self._record(stmt, path, test, stmt.msg)
                path = (*path, Branch(test, True, enclosing=False))
            elif isinstance(stmt, ast.Raise) and stmt.exc is not None:
                self._record(stmt, path, None, _raised_message(stmt.exc))
            elif isinstance(stmt, ast.If):
                test = plain(stmt.test)
                self._block(stmt.body, (*path, Branch(test, True)))
                self._block(stmt.orelse, (*path, Branch(test, False)))
                if _exits(stmt.body) and not _exits(stmt.orelse):
                    path = (*path, Branch(test, False, enclosing=False))
                elif _exits(stmt.orelse) and not _exits(stmt.body):
                    path = (*path, Branch(test, True, enclosing=False))
            else:
                for block in blocks(stmt):
                    self._block(block, path)

    def _calls(self, nodes: list[ast.AST], path: tuple[Branch, ...]) -> None:
        for node in nodes:
            for call in ast.walk(node):
                if isinstance(call, ast.Call) and isinstance(call.func, ast.Name):
                    self.calls.append((call.func.id, Route(path, self.scope)))

    def _depends_on_arch(self, test: ast.expr) -> bool:
        return len({self.scope.truth(test, arch, {}) for arch in ARCHITECTURES}) > 1

    def _record(
        self,
        stmt: ast.stmt,
        path: tuple[Branch, ...],
        test: ast.expr | None,
        message: ast.expr | None,
    ) -> None:
        enclosing = [branch for branch in path if branch.enclosing]
        by_arch = [index for index, b in enumerate(enclosing) if self._depends_on_arch(b.test)]
        if not by_arch and (test is None or not self._depends_on_arch(test)):
            return
        local = tuple(enclosing[by_arch[-1] + 1 :] if by_arch else enclosing)
        own = [b.source for b in local] + ([ast.unparse(test)] if test is not None else [])
        self.found.append(
            Refusal(
                file=self.file,
                line=stmt.lineno,
                function=self.qualname,
                text=" ".join(_segment(self.source, stmt).split()),
                message=_literal(message),
                architectures=(),
                backward=self.backward,
                condition=" and ".join(own),
                branch=enclosing[by_arch[-1]].source if by_arch else "",
                path=Route(path, self.scope),
                test=test,
                local=local,
                callers=(),
            )
        )


def _segment(source: str, node: ast.stmt) -> str:
    """`ast.get_source_segment(source, node)`, from the source's lines split once per text
    (it splits the whole module on every call: 2 s of a release's mining)."""
    lines = _lines(source)
    first, last = node.lineno - 1, node.end_lineno - 1
    if first == last:
        return lines[first].encode()[node.col_offset : node.end_col_offset].decode()
    return "".join(
        [
            lines[first].encode()[node.col_offset :].decode(),
            *lines[first + 1 : last],
            lines[last].encode()[: node.end_col_offset].decode(),
        ]
    )


@functools.lru_cache(maxsize=64)
def _lines(source: str) -> tuple[str, ...]:
    """The lines as the parser numbers them, each with its end: CR LF, CR or LF (a form feed
    is no line end)."""
    return tuple(re.findall(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z", source))


def _call_name(qualname: str) -> str | None:
    """The name calls enter a function by: a module function's own, a class's for `__init__`."""
    parts = qualname.split(".")
    if len(parts) == 1:
        return parts[0]
    if len(parts) == 2 and parts[1] == "__init__":
        return parts[0]
    return None


def _exits(body: list[ast.stmt]) -> bool:
    """Whether a block always leaves the code after it (its last statement raises or returns)."""
    return bool(body) and isinstance(body[-1], (ast.Raise, ast.Return))


def _raised_message(exception: ast.expr) -> ast.expr:
    """The message of `raise Error("...")`: its first argument."""
    if isinstance(exception, ast.Call) and exception.args:
        return exception.args[0]
    return exception


def _literal(node: ast.expr | None) -> str:
    """A message as the kernel writes it: the string, or the f-string's source."""
    if node is None:
        return ""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return ast.unparse(node)
