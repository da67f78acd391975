"""Binding names: where a value's fresh parts came from (`Site`s), destructuring, and what a
change in place makes the interpreter forget."""

from __future__ import annotations

import ast

from lint_plugin.engine.absint import (
    FRESH,
    FRESH_SITE,
    State,
    Value,
    const,
    new_site,
    new_value,
    unknown,
)
from lint_plugin.engine.interpret.folding import IMMUTABLE
from lint_plugin.engine.program import dotted_name, root_names

#: Not asked yet (`Program.own_enablers` answers None for "all its own").
_UNSEEN = object()


class Binding:
    """How `Interpreter` writes to a state."""

    def store(self, name: str, value: Value, state: State) -> None:
        """Bind `name`, recording this statement as where its fresh parts came from.

        A possibly-true value copied from another variable counts as enabled *here* (the line
        that turns the backend on for this flag); one carried over from the flag's own earlier
        value keeps its origin. Possibly-false origins are kept as they are: they are the
        filters that may have switched a flag off. A name the run never binds
        (`Facts.unbound`) is left unbound.
        """
        if name in self.facts.unbound:
            return
        site = None
        enablers, disablers = value.enablers, value.disablers
        if enablers:
            if enablers is FRESH:  # a value made here (most stores): no site of its own yet
                site = new_site((self.stmt, state.path | value.deps if value.deps else state.path))
                enablers = frozenset((site,))
            else:
                own = self.program.own_enablers_memo.get((name, enablers), _UNSEEN)
                if own is _UNSEEN:
                    own = self.program.own_enablers(name, enablers)
                if own is not None:
                    site = new_site((self.stmt, state.path | value.deps))
                    enablers = frozenset((*own, site))
        if FRESH_SITE in disablers:
            if site is None:
                site = new_site((self.stmt, state.path | value.deps if value.deps else state.path))
            disablers = frozenset((site,)) if disablers is FRESH else (disablers - FRESH) | {site}
        if enablers is not value.enablers or disablers is not value.disablers:
            value = new_value(
                (value.const, value.truth, value.deps, enablers, disablers, value.choices)
            )
        state.vars[name] = value

    def assign(self, target: ast.AST, value: Value, state: State) -> None:
        if isinstance(target, ast.Name):
            self.store(target.id, value, state)
        elif isinstance(target, (ast.Tuple, ast.List)):
            elements = target.elts
            known = value.known and isinstance(value.const, (tuple, list))
            if (
                known
                and len(value.const) == len(elements)
                and not any(isinstance(e, ast.Starred) for e in elements)
            ):
                for element, item in zip(elements, value.const):
                    self.assign(element, const(item, value.deps), state)
            else:
                for element in elements:
                    self.assign(element, unknown(value.deps), state)
        elif isinstance(target, ast.Starred):
            self.assign(target.value, unknown(value.deps), state)
        elif isinstance(target, ast.Attribute):
            dotted = dotted_name(target)
            if dotted is not None:
                self.store(dotted, value, state)
        elif isinstance(target, ast.Subscript):
            for name in root_names(target.value, self.program.locals):
                if name in state.vars:
                    self._mutated(name, value.deps, state)

    def _mutated(self, name: str, deps: frozenset[str], state: State) -> None:
        """An object held by a local variable was changed in place: forget what was known."""
        held = state.vars[name]
        if not (held.known and isinstance(held.const, IMMUTABLE)):
            self.store(name, unknown(held.deps | deps), state)
