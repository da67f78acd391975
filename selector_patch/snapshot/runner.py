"""Ask a loaded selector every request of a grid.

Each pairwise row is turned into a `Scenario` and `AttentionParams` fields once
(`selector_patch.testing.inputs.request_of`, the `select()` vocabulary); every configuration then
moves it to its architecture, mode and switches. A named constant (`torch.float16`) is looked up
in the loaded module, as the selector would see it. A row that names an input this release does
not have, or that its `AttentionParams` cannot express, is answered as not expressible; a
selection that raises in the selector's own code is answered with what it raised. A machine the
release's module does not even import on (TE 1.9 requires flash-attn 2 at import) cannot express
any request: so answered, and a value only such machines take is dropped from the grid.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, AbstractSet, Any, Callable, ContextManager, Iterator

from selector_patch.scoped_env import EVERY
from selector_patch.snapshot.comparisons import Expression
from selector_patch.snapshot.grid import ARCHITECTURE, MODES, Configuration, Factor, Grid
from selector_patch.snapshot.outcome import Outcome, Reader
from selector_patch.testing.inputs import request_of

#: What a selection is taken to have read where its reads are not recorded.
READ_EVERY = frozenset((EVERY,))
#: Read by a selection that was told whether a backward will run (`harness.grad_state`).
BACKWARD = "(backward)"

if TYPE_CHECKING:
    from selector_patch.harness import LoadedSelector
    from selector_patch.scenario import Scenario


def resolve(value: Any, namespace: dict[str, Any]) -> Any:
    """`value`, with a named constant looked up in the module's namespace (`LookupError`)."""
    if isinstance(value, tuple):
        return tuple(resolve(item, namespace) for item in value)
    return value.resolve(namespace) if isinstance(value, Expression) else value


def failure_text(error: BaseException) -> str:
    """What the selector raised, without the file or machine (both sides raise alike)."""
    from selector_patch.harness.failures import describe

    cause = error.__cause__
    if cause is not None:
        return describe(cause)
    return str(error).split(": ", 1)[-1]


def unmodelled(error: BaseException) -> bool:
    """Whether the selection failed on what the virtual device does not model (a branch on, or
    a lookup of, a stand-in for a module it does not load, such as TE's context-parallel code):
    a request this harness cannot express, not something the selector does."""
    from selector_patch.harness import OpaqueDecision
    from selector_patch.harness.opaque import is_opaque

    cause = error.__cause__
    return isinstance(cause, OpaqueDecision) or any(
        is_opaque(argument) for argument in getattr(cause, "args", ())
    )


class Asker:
    """One loaded selector, asked requests of one grid."""

    def __init__(self, loaded: "LoadedSelector", grid: Grid) -> None:
        from selector_patch import harness  # loaded: the harness is imported already

        self.loaded = loaded
        self.grid = grid
        self.reader = Reader()
        self._rows: dict[int, tuple["Scenario", dict[str, Any]] | str] = {}
        #: Per row and mode, the `AttentionParams` keywords built (`LoadedSelector.select`).
        self._memos: dict[tuple[int, str], dict[int, dict[str, Any]]] = {}
        #: Each environment a request is asked in, by the row's own variables and the setting.
        self._envs: dict[tuple, tuple[tuple[str, str], ...]] = {}
        self._failures = harness.Unrepresentable, harness.SelectionError, harness.LoadError
        # The `os` the selector reads its variables through (`scoped_env.OsView`); a module
        # that reads them some other way gets no twin answers (every read is taken as made).
        self._recording = getattr(loaded.module.__dict__.get("os"), "recording", None)
        self._backward_unseen = loaded.backward_unseen

    def row(self, index: int) -> tuple["Scenario", dict[str, Any]] | str:
        """The row's request, or why this release cannot take it."""
        if index not in self._rows:
            self._rows[index] = self._request(index)
        return self._rows[index]

    def _request(self, index: int) -> tuple["Scenario", dict[str, Any]] | str:
        namespace = self.loaded.module.__dict__
        try:
            keywords = {
                name: resolve(value, namespace)
                for name, value in self.grid.row_keywords(index).items()
            }
        except LookupError as error:
            return str(error)
        try:
            return request_of(keywords, self.loaded.params_fields)
        except TypeError as error:
            return str(error).split(": ", 1)[-1]

    def switch_env(self, switches: tuple[bool, ...]) -> dict[str, str]:
        return {s.name: s.off for s, on in zip(self.grid.switches, switches) if not on}

    def ask(self, configuration: Configuration) -> tuple[Outcome, frozenset[str]]:
        """The outcome, and the `NVTE_*` variables the selection read (and `BACKWARD` where
        it may have been told that a backward will run)."""
        Unrepresentable, SelectionError, LoadError = self._failures
        request = self.row(configuration.row)
        if isinstance(request, str):
            return self.reader.failed(unrepresentable=request), frozenset()
        row, params = request
        env = self._envs.get((row.env, configuration.switches))
        if env is None:
            switched = self.switch_env(configuration.switches)
            env = self._envs[(row.env, configuration.switches)] = tuple(
                sorted({**dict(row.env), **switched}.items())
            )
        scenario = _moved(
            row,
            {ARCHITECTURE: configuration.architecture, **MODES[configuration.mode], "env": env},
        )
        memo = self._memos.setdefault((configuration.row, configuration.mode), {})
        told = self.loaded.grad_reads
        with self._record() as read:
            try:
                selection = self.loaded.select(scenario, params, memo)
            except Unrepresentable as error:
                outcome = self.reader.failed(unrepresentable=str(error))
            except SelectionError as error:
                if unmodelled(error):
                    outcome = self.reader.failed(unrepresentable=failure_text(error))
                else:
                    outcome = self.reader.failed(error=failure_text(error))
            except LoadError as error:  # not a selection: the module's import on this machine
                outcome = self.reader.failed(unrepresentable=failure_text(error))
            else:
                outcome = self.reader.outcome(selection)
        if not self._backward_unseen or self.loaded.grad_reads != told:
            return outcome, frozenset((*read, BACKWARD))
        return outcome, frozenset(read)

    def _record(self) -> ContextManager[AbstractSet[str]]:
        """A block that gives the variables read within it (all of them, `EVERY`, for a
        module that does not read them through the view)."""
        if self._recording is None:
            return contextlib.nullcontext(READ_EVERY)
        return self._recording()


def _moved(scenario: "Scenario", changes: dict[str, Any]) -> "Scenario":
    """`dataclasses.replace` without its per-field work: the values are a row's, already
    checked, moved to a configuration's architecture, mode and switches (some 100,000 times a
    snapshot, where `replace` costs a fifth of the harness's own time)."""
    moved = object.__new__(type(scenario))
    moved.__dict__.update(scenario.__dict__)
    moved.__dict__.update(changes)
    return moved


def _twins(settings: list[tuple[bool, ...]], names: list[str]) -> list[list[tuple[int, str]]]:
    """Per setting, its twins: the same setting with one switched-off backend left on, by
    index, and that switch's name."""
    index = {setting: position for position, setting in enumerate(settings)}
    twins = []
    for setting in settings:
        found = []
        for position, on in enumerate(setting):
            if not on:
                twin = (*setting[:position], True, *setting[position + 1 :])
                found.append((index[twin], names[position]))
        twins.append(found)
    return twins


def _mode_twins(modes: tuple[str, ...]) -> dict[str, str]:
    """Per mode, an earlier one that differs from it in the backward alone (forward-only's is
    eval with a backward): a selection never told the backward answers both."""
    twins = {}
    for position, mode in enumerate(modes):
        for earlier in modes[:position]:
            if {**MODES[earlier], "backward": None} == {**MODES[mode], "backward": None}:
                twins[mode] = earlier
    return twins


def run(
    loaded: "LoadedSelector", grid: Grid, advance: Callable[[int], None] = lambda _count: None
) -> list[Outcome]:
    """Every configuration's outcome, in the grid's order; `advance(n)` after each `n` done.

    The grid's order puts every switch's "on" before its "off", so a request's twins (`_twins`)
    are always answered first, and its modes in `MODES`' order, so its twin in a mode that
    differs in the backward alone (`_mode_twins`) too; only the answers of the current
    architecture are kept.
    """
    asker = Asker(loaded, grid)
    settings = grid.settings()
    twins = _twins(settings, [switch.name for switch in grid.switches])
    mode_twins = _mode_twins(grid.modes)
    outcomes = []
    for architecture in grid.architectures:
        by_mode: dict[str, dict[tuple[int, int], tuple[Outcome, frozenset[str]]]] = {}
        for mode in grid.modes:
            answered = by_mode[mode] = {}
            backward_twin = by_mode.get(mode_twins.get(mode), {})
            for index, setting in enumerate(settings):
                for row in grid.rows_of(setting):
                    answer = None
                    for twin, name in twins[index]:
                        known = answered.get((twin, row))  # pairs: not under every setting
                        if known is not None and name not in known[1] and EVERY not in known[1]:
                            answer = known
                            break
                    if answer is None:
                        known = backward_twin.get((index, row))
                        if known is not None and BACKWARD not in known[1]:
                            answer = known
                    if answer is None:
                        configuration = Configuration(architecture, mode, setting, row)
                        answer = asker.ask(configuration)
                    answered[(index, row)] = answer
                    outcomes.append(answer[0])
                advance(len(grid.rows_of(setting)))
    return outcomes


def probe(loaded: "LoadedSelector", factors: list[Factor]) -> Iterator[Factor]:
    """Each factor without the values the selector cannot take alone, each tried in the plain
    call: a value that raises there, or that the release cannot express, is dropped with the
    reason (`fp8=True` without an FP8 recipe raises in TE's own code)."""
    from selector_patch.harness import LoadError, SelectionError, Unrepresentable

    namespace = loaded.module.__dict__
    for factor in factors:
        kept, dropped = [], list(factor.dropped)
        for value in factor.levels:
            try:
                scenario, params = request_of(
                    {factor.keyword: resolve(value, namespace)}, loaded.params_fields
                )
                loaded.select(scenario, params)
            except (LookupError, TypeError) as error:
                dropped.append((value, str(error).split(": ", 1)[-1]))
            except Unrepresentable as error:
                dropped.append((value, f"not expressible: {error}"))
            except SelectionError as error:
                reason = (
                    "needs what the virtual device does not model"
                    if unmodelled(error)
                    else "raised"
                )
                dropped.append((value, f"the plain call {reason}: {failure_text(error)}"))
            except LoadError as error:  # not a selection: the module's import on this machine
                dropped.append((value, f"the release does not import: {failure_text(error)}"))
            else:
                kept.append(value)
        yield factor._replace(levels=tuple(kept), dropped=tuple(dropped))
