"""Which flash backend a TE 2.2+ selector's return value makes TE run.

TE 2.2+ returns `(use_flash_attention, flash_attention_backend, ...)`. `DotProductAttention`
runs FlashAttention when the first is true and picks the flash-attn generation from the second
alone (`selector_patch.roles.dispatched_role`): FA4 for a major-4 version, FA3 for major 3, the
flash-attn 2 code path for anything else - FA2's version, `None`, or the `PkgVersion("0")` TE
holds for a package that is not installed. A flash backend is selected by those two values, not
by its own flag: a filter that switches `use_flash_attention_4` off after the version was picked
changes nothing, and `use_flash_attention_3` re-enabled after its "installed" filter makes TE run
FlashAttention 2. So the analyzer asks the returns, in three steps:

- each flash role's version expression is bound to a `FlashVersion`, so the returned version
  says whose package it came from;
- the gate and the version are correlated through the flags (the version stays `None` only when
  every flag was off where the gate was computed from them), which joining paths would lose:
  from the first top-level statement that computes the selection from the flags on, the run
  keeps one state per truth assignment of the flash flags;
- a version whose package may or may not be installed runs its own role or FA2; where only that
  makes FA2 reachable, the run is repeated with the package's "installed" expression bound both
  ways (TE's own filters then keep a flag off for a package that is absent).

TE 1.9 - 2.1 return the FA2 flag itself; there the flag at the return is the selection.
"""

from __future__ import annotations

import ast
import itertools
from typing import Callable, Iterable, Iterator

from lint_plugin.engine.absint import (
    TRUE,
    State,
    Value,
    alternatives,
    const,
    join_states,
    one_of,
    with_truth,
)
from lint_plugin.engine.dialect import Dialect
from lint_plugin.engine.interpreter import Facts
from lint_plugin.engine.program import Program, function_index, is_falsy_constant
from selector_patch import versions
from selector_patch.records import Record, TupleRecord
from selector_patch.roles import FLASH_FALLBACK, ROLES

#: Roles TE tells apart by the returned flash version.
FLASH_ROLES = tuple(name for name, role in ROLES.items() if role.flash_major is not None)


class FlashVersion(Record):
    """The value of a flash role's version expression (`FlashAttentionUtils.fa4_version`).

    Truthy like a `PkgVersion`. It is ordered against a version (`versions.pkg_version`) only where
    the witness pins the release (a guard for a defect that a later release fixed tests it);
    otherwise comparisons with it raise, which the interpreter reads as unknown.
    """

    role: str
    #: Whether the role's package is installed (TE holds version 0 when not); None: unknown.
    installed: bool | None
    #: The installed release, where the witness pins it.
    release: str | None = None

    def _order(self, other: object) -> tuple[object, object]:
        if self.release is None or not self.installed or not versions.is_version(other):
            raise TypeError("the flash version is not known here")
        return versions.pkg_version(self.release), other

    def __lt__(self, other: object) -> bool:
        mine, theirs = self._order(other)
        return mine < theirs

    def __le__(self, other: object) -> bool:
        mine, theirs = self._order(other)
        return mine <= theirs

    def __gt__(self, other: object) -> bool:
        mine, theirs = self._order(other)
        return mine > theirs

    def __ge__(self, other: object) -> bool:
        mine, theirs = self._order(other)
        return mine >= theirs

    def runs(self) -> frozenset[str]:
        """The roles TE may run when this version is returned."""
        if self.installed is None:
            return frozenset((self.role, FLASH_FALLBACK))
        return frozenset((self.role if self.installed else FLASH_FALLBACK,))


class ReturnShape(TupleRecord):
    """How every return of a selector names its flash selection."""

    #: The returned "use FlashAttention" variable and the returned flash version variable.
    gate: str
    version: str
    #: The dialect's flash flags by role, the ones the split decides.
    flags: dict[str, str]
    #: The first top-level statement that computes the gate or the version from the flags.
    split_at: ast.stmt | None


def return_shape(program: Program, dialect: Dialect) -> ReturnShape | None:
    """The shape, when every return is `(gate, version, ...)` and the version is TE's (2.2+)."""
    index = function_index(program.function)
    pairs = {_leading_names(node.value) for node in index.returns}
    if len(pairs) != 1 or None in pairs:
        return None
    ((gate, version),) = pairs
    expressions = {dialect.version(role) for role in FLASH_ROLES} - {None}
    version_bit = program.names.of(version)
    if not any(  # (`own_assignments` are all `Assign`s: `Program.binds` without its type test)
        program.stored_bits(node) & version_bit and ast.unparse(node.value) in expressions
        for node, _ in index.own_assignments
    ):
        return None
    flags = {role: flag for role in FLASH_ROLES if (flag := dialect.flag(role)) and flag != gate}
    return ReturnShape(gate, version, flags, _split_at(program, flags, {gate, version}))


def _split_at(program: Program, flags: dict[str, str], selection: set[str]) -> ast.stmt | None:
    """The first top-level statement that reads a flash flag and, somewhere inside, assigns
    the gate or the version something not falsy."""
    flag_bits, selection_bits = program.names.bits(flags.values()), program.names.bits(selection)
    for node, top in function_index(program.function).own_assignments:
        if (
            program.stored_bits(node) & selection_bits
            and not is_falsy_constant(node.value)
            and program.read_bits(top) & flag_bits
        ):
            return top
    return None


def _leading_names(value: ast.expr | None) -> tuple[str, str] | None:
    """`(a, b)` for a returned tuple that starts with two plain names."""
    if not (isinstance(value, ast.Tuple) and len(value.elts) >= 2):
        return None
    first, second = value.elts[:2]
    if isinstance(first, ast.Name) and isinstance(second, ast.Name):
        return first.id, second.id
    return None


def partition(names: Iterable[str]) -> Callable[[list[State]], list[State]]:
    """One state per truth assignment of the flags, from states where some may be undecided.

    The states are the caller's to give: one with every flag decided is a part as it is."""
    flags = tuple(names)

    def split(states: list[State]) -> list[State]:
        parts: dict[tuple[bool | None, ...], State] = {}
        for state in states:
            undecided = [f for f in flags if f in state.vars and state.vars[f].truth is None]
            for truths in itertools.product((True, False), repeat=len(undecided)):
                part = state.copy() if undecided else state
                for flag, truth in zip(undecided, truths):
                    part.vars[flag] = with_truth(part.vars[flag], truth)
                key = tuple(part.vars[f].truth if f in part.vars else None for f in flags)
                parts[key] = join_states(parts.get(key), part)
        return list(parts.values())

    return split


def package_facts(facts: Facts, dialect: Dialect, installed: dict[str, bool | None]) -> Facts:
    """`facts` with every flash version bound (keeping a release the witness pinned), and the
    "installed" answers that are known."""
    names = dict(facts.names)
    for role in FLASH_ROLES:
        version, flag = dialect.version(role), dialect.installed(role)
        known = installed.get(role)
        if version is not None:
            pinned = alternatives(names[version]) if version in names else None
            releases = {v.release for v in pinned if isinstance(v, FlashVersion)} if pinned else {}
            names[version] = one_of(FlashVersion(role, known, r) for r in releases or (None,))
        if flag is not None and known is not None:
            names[flag] = TRUE if known else const(False)
    return facts._replace(names=names)


def selecting_states(
    states: list[State], shape: ReturnShape, role: str
) -> Iterator[tuple[State, str | None]]:
    """Return states where TE may run `role`, each with the package that decides it, if any.

    The package is a role whose installation is unknown and whose version, returned, runs
    `role` only when that package is absent.
    """
    for state in states:
        gate, version = state.vars.get(shape.gate), state.vars.get(shape.version)
        if gate is None or version is None or gate.truth is False:
            continue
        options = alternatives(version)
        if options is None:  # an unknown version may be any
            yield state, None
            continue
        for value in options:  # the version, or each release the witnesses pin
            if isinstance(value, FlashVersion):
                if role in value.runs():
                    undecided = value.installed is None and role != value.role
                    yield state, value.role if undecided else None
                    break
            elif value is not None or role == FLASH_FALLBACK:
                yield state, None
                break


def provenance(state: State, role: str, shape: ReturnShape) -> Value:
    """What a finding points at: the role's flag if it is still on, else the flag of the role
    whose version is returned, else the gate."""
    version = state.vars[shape.version].const
    owners = [role, version.role] if isinstance(version, FlashVersion) else [role]
    for flag in (shape.flags[owner] for owner in owners if owner in shape.flags):
        value = state.vars.get(flag)
        if value is not None and value.truth is not False:
            return value
    return state.vars[shape.gate]
