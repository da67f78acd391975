"""Proof by one guard: a filter whose conditions hold for the witnesses, where nothing after it
can switch the backend on again.

A witness run interprets the whole slice of the backend's flag: on TE 2.20.2, 280 statements for
FusedAttention, every filter TE has for it and what their tests read. A selector that carries a
guard for each of TE's fixes (what `--check` and the codemod's own re-analysis are asked about)
needs one such run per hazard, each to find again what one `if` says. This proves a hazard's
witnesses guarded from that `if` alone:

- an `if c1 and ... and cn:` whose body sets the flag to `False` (a `raise` in it ends the path,
  which selects nothing), the flag itself possibly among the conditions (TE's idiom, `if
  use_fused_attention and ...`), at the top level or in the body of such `if`s, whose
  conditions then add to its own (TE's `if inference_params is not None:`, then the
  architecture's `if`);
- at or after the first top-level statement from which nothing can make the backend selectable
  again once its flag is off (`Settled.from_statement`), and before any `return`;
- every condition but the flag itself definitely true, in every state the witnesses reach the
  `if` in. Then on every path the flag is off after it (set so, or off already, as the flag
  condition is then false) and stays off: no return selects the backend.

Only what those conditions read needs interpreting, up to the `if`: the slice of their names at
that statement (`Slice` with points: one slice serves every guard of a backend), with every
backend flag cut (read as unknown, never bound). On TE 2.20.2 with TE's fixes guarded, a
FusedAttention guard's run takes 38 - 65 statements where a witness run takes 280 - 310, and
`--check --te-fixes` interprets 1,992 statements instead of 5,652. (A slice of each guard's own
runs 2 - 9, but building one per guard takes what that saves: 56 ms of planning either way.) A
slice leaves statements out, so its run is at most less precise, never wrong: a condition it
finds definitely true is definitely true in the full run too. Anything else (a condition unknown
there, a guard spelt another way) leaves the witnesses to the witness runs
(`analysis._analyze_function`).

Where every name a guard's conditions read holds, at the guard, just what a witness's facts pin
(`pinned`) - read straight off the argument or the hardware or cuDNN query by the one statement
that ever binds it, or never bound at all - the conditions are judged on those facts without a
run (`Guard.pinned`). A run's states there hold the same values, narrowed at most by the tests
on their way, and a condition true for the wider value is true for the narrower. What a run
would also ask there, whether a witness run stops (`Settled.off`), the statements before the
guard tell where TE dispatches on a returned flash version: none binds a version expression,
and the returned version variable is bound only to constants (`_settles_before`). On TE 2.20.2
with TE's fixes guarded, 21 of the 23 hazards that `--check --te-fixes` proves by a guard need
no run; the other two's guards read the sliding window, which TE binds again
(`check_set_window_size`). The command then interprets 810 statements, where slice runs alone
took it to 1,992.

Where TE dispatches on a returned flash version (2.2+), the flag off is not the whole answer:
the run also follows the returned version variable and the versions' expressions to the guard,
which must not write them, and the states there, the flag off, must be where a witness run
stops with the answer "cannot" (`Settled.off`: the version held is not the backend's). A run
about a flash backend binds its package installed (`dispatch.package_facts`), as the witness
run's first does. FlashAttention 2 runs for any version that is not FA3's or FA4's, so it never
settles, and TE 1.11 - 2.1's FA3 reads a module global set at import (`GATED_FLAGS`): for
those, the witness runs decide.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Sequence

from lint_plugin.engine.absint import State, const
from lint_plugin.engine.dialect import COMPUTE_CAPABILITY_QUERY, CUDNN_VERSION_QUERY, Dialect
from lint_plugin.engine.interpreter import Facts, Interpreter
from lint_plugin.engine.program import Program, function_index, is_falsy_constant
from lint_plugin.engine.settled import Settled
from lint_plugin.engine.slicing import Slice
from selector_patch.records import TupleRecord
from selector_patch.roles import GATED_FLAGS

if TYPE_CHECKING:
    from lint_plugin.engine.analysis import Selector

#: Candidate guards tried per hazard, the likeliest first: each costs a (short) run.
TRIED = 2


class Guard(TupleRecord):
    """An `if` that switches a flag off where its `conditions` all hold."""

    #: The top-level statement that holds it.
    index: int
    #: Its test's conjuncts and those of the `if`s around it, the flag itself left out.
    conditions: tuple[ast.expr, ...]
    #: What they read (`Program.read_bits`).
    reads: int
    #: The names whose pinned values decide the conditions without a run
    #: (`_Binders.pinned_names`), or None where a name they read may hold something else there.
    pinned: frozenset[str] | None


def guards(program: Program, dialect: Dialect, flag: str, settled: Settled) -> tuple[Guard, ...]:
    """The `if`s that can prove a witness guarded (module docstring), in order. Where TE
    dispatches on a returned flash version, the top-level statement holding one writes no
    version (`versions`): what `Settled.off` asks of the version held there, it holds after."""
    if flag in GATED_FLAGS:
        return ()
    versions = watched_versions(program, flag, settled)
    found: list[Guard] = []
    returns = function_index(program.function).returns
    first_return = min((node.lineno for node in returns), default=None)
    for index, stmt in enumerate(program.function.body):
        if first_return is not None and stmt.end_lineno >= first_return:
            break  # the paths through a return are not decided by what follows
        if (
            type(stmt) is ast.If
            and settled.from_statement[index]
            and program.kill_bits(stmt) & program.names.of(flag)  # (else it holds none)
            and not program.write_bits(stmt) & versions
        ):
            _collect(program, flag, index, stmt, (), found)
    binders = _Binders(program, dialect, settled)
    return tuple(guard._replace(pinned=binders.pinned_names(guard)) for guard in found)


class _Binders:
    """Where the names guards read are bound, found once per name for every guard of a flag."""

    #: `binder` of a name no statement binds or changes.
    UNBOUND = -1

    def __init__(self, program: Program, dialect: Dialect, settled: Settled) -> None:
        self.program = program
        self.dialect = dialect
        self.writes = [program.write_bits(stmt) for stmt in program.function.body]
        self._binders: dict[str, int | None] = {}
        #: The top-level statements before which a run may stop wherever the flag is off, as
        #: the statements before them tell (`_settles_before`): those up to this index.
        self.settled_until = _settles_before(program, settled, self.writes)

    def pinned_names(self, guard: Guard) -> frozenset[str] | None:
        """The names `guard`'s conditions read that `pinned` must hold for them to be judged on
        the facts alone; None where one may hold, at the guard, what the facts do not say.

        A name read (each prefix of a dotted name is read too) qualifies where no statement of
        the function binds or changes it (a keyword-parameter input is then the facts' own, in
        `pinned` by its name), or where one top-level statement before the guard does, and only
        it (`binder`). None too where the statements before the guard cannot tell that a run
        would stop there (`settled_until`)."""
        if guard.index > self.settled_until:
            return None
        needed = set()
        for name in self.program.names.named(guard.reads):
            binder = self.binder(name)
            if binder is None or binder >= guard.index:
                return None
            if binder != self.UNBOUND or name in self.program.inputs:
                needed.add(name)
        return frozenset(needed)

    def binder(self, name: str) -> int | None:
        """The index of the one top-level statement binding `name` to what `pinned` holds in it
        (`name = param.field`, pinned as `field_expression(field)`, or `name = query()` of the
        hardware or cuDNN query, pinned in the names holding its answer); `UNBOUND` where no
        statement binds or changes it; None where others do, or that one binds something else."""
        if name not in self._binders:
            bit = self.program.names.of(name)
            writers = [index for index, written in enumerate(self.writes) if written & bit]
            if not writers:
                self._binders[name] = self.UNBOUND
            else:
                stmt = self.program.function.body[writers[0]]
                pins = (
                    len(writers) == 1
                    and type(stmt) is ast.Assign
                    and len(stmt.targets) == 1
                    and type(stmt.targets[0]) is ast.Name
                    and self._pins(name, stmt.value)
                )
                self._binders[name] = writers[0] if pins else None
        return self._binders[name]

    def _pins(self, name: str, value: ast.expr) -> bool:
        """Whether `name = value` binds what `pinned` holds in `name`: a call of the hardware or
        cuDNN query, which the facts answer (no local helper of that name runs instead), or a
        field read off the argument, which nothing binds or changes."""
        program = self.program
        if type(value) is ast.Call:
            func = value.func
            callee = func.id if type(func) is ast.Name else getattr(func, "attr", None)
            return (
                callee in (COMPUTE_CAPABILITY_QUERY, CUDNN_VERSION_QUERY)
                and not (value.args or value.keywords)
                and not program.calls_helper(value)
            )
        return (
            type(value) is ast.Attribute
            and type(value.value) is ast.Name
            and value.value.id == program.parameter
            and self.dialect.field_expression(value.attr) == name
            and self.binder(program.parameter) == self.UNBOUND
            and self.binder(f"{program.parameter}.{value.attr}") == self.UNBOUND
        )


def _collect(
    program: Program,
    flag: str,
    index: int,
    stmt: ast.If,
    outer: tuple[ast.expr, ...],
    found: list[Guard],
) -> None:
    """The guards `stmt` holds, reached under the `outer` conditions: itself where its body
    switches the flag off, and the `if`s of its body (TE's `if inference_params is not None:`
    then the architecture's own `if`) where no statement before one in that body writes what
    its conditions read, so that they read at `index` what they read where they run. The flag
    is no condition: an earlier `if` of that body may switch it off (TE's FA4 filter for
    `num_splits` on SM < 100 before one on sm120), and off it stays either way."""
    own = _conditions(stmt.test, flag)
    if any(program.calls_helper(condition) for condition in own):
        return
    conditions = outer + own
    if conditions and _switches_off(stmt.body, flag):
        reads = 0
        for condition in conditions:
            reads |= program.read_bits(condition)
        found.append(Guard(index, conditions, reads, None))
    written, killed = 0, program.names.of(flag)
    for inner in stmt.body:
        if (
            type(inner) is ast.If
            and program.kill_bits(inner) & killed
            and not any(
                program.read_bits(condition) & written
                for condition in _conditions(inner.test, flag)
            )
        ):
            _collect(program, flag, index, inner, conditions, found)
        written |= program.write_bits(inner)


def _settles_before(program: Program, settled: Settled, writes: list[int]) -> int:
    """The last top-level statement before which every state whose flag is off is one where a
    run may stop (`Settled.off`), as the statements before it tell without a run: all of them
    where the flag off is the whole answer. Where TE dispatches on a returned flash version, no
    statement before it may bind a version expression (a run's states would hold it), and the
    returned version variable may be bound there only to constants (TE's
    `flash_attention_backend = None`): none is a flash version."""
    body = program.function.body
    if settled.version is None:
        return len(body)
    if settled.version in program.inputs:
        return -1  # a run's first state holds it
    names = program.names
    expressions = names.bits(settled.others) | (
        names.of(settled.own_version) if settled.own_version else 0
    )
    version = names.of(settled.version)
    for index, (stmt, written) in enumerate(zip(body, writes)):
        if written & expressions or (
            written & version
            and not (type(stmt) is ast.Assign and type(stmt.value) is ast.Constant)
        ):
            return index
    return len(body)


def _conditions(test: ast.expr, flag: str) -> tuple[ast.expr, ...]:
    """`test`'s conjuncts, the flag itself left out."""
    conjuncts = test.values if type(test) is ast.BoolOp and type(test.op) is ast.And else [test]
    return tuple(c for c in conjuncts if not (type(c) is ast.Name and c.id == flag))


def proven(prepared: Selector, role: str, triggers: int, facts: Facts) -> bool:
    """Whether one of the guards of `role`'s backend proves the run of `facts` guarded: its
    conditions all definitely true where the run reaches it.

    Tried, at most `TRIED` of them: the guards each of whose conditions may hold (`may_hold`:
    TE's sm120 filter is passed over for a witness on sm121, and one on the softmax type for a
    hazard that does not pin it), those reading the most of `triggers` (bits: the names derived
    from the hazard's inputs) first, the later of equals first (a guard the codemod inserted
    follows TE's own filters)."""
    program = prepared.program
    held, judge = pinned(prepared, facts), Interpreter(program, facts)
    truths: dict[ast.expr, bool | None] = {}  # (guards share their outer conditions)

    def on_the_facts(condition: ast.expr) -> bool | None:
        """The condition's truth for what the facts pin."""
        if condition not in truths:
            truths[condition] = judge.eval(condition, held).truth
        return truths[condition]

    def may_hold(condition: ast.expr) -> bool:
        """Not false for what the facts pin, and where not known from it, computed from the
        hazard's inputs: a condition only other inputs decide stays unknown in the run."""
        truth = on_the_facts(condition)
        return truth is True or (truth is None and bool(program.read_bits(condition) & triggers))

    likely = sorted(
        (
            guard
            for guard in prepared.guards(role)
            if guard.reads & triggers and all(map(may_hold, guard.conditions))
        ),
        key=lambda guard: ((guard.reads & triggers).bit_count(), guard.index),
        reverse=True,
    )
    if not likely:
        return False
    if any(
        guard.pinned is not None
        and guard.pinned <= held.vars.keys()
        and all(on_the_facts(condition) is True for condition in guard.conditions)
        for guard in likely
    ):
        return True  # and a run would stop there (`_settles_before`): no run to make
    flag, settled = prepared.dialect.flag(role), prepared.settled(role)
    cut = prepared.dialect.backend_flags
    facts = facts._replace(opaque=facts.opaque | cut, unbound=cut)
    for guard in likely[:TRIED]:
        interpreter = Interpreter(program, facts, None, prepared.guards_slice(role))
        states = interpreter.run(stop=lambda index, _states: index == guard.index)
        if (
            states
            and all(_holds(interpreter, guard, state) for state in states)
            and settled.off(guard.index, [_switched_off(state, flag) for state in states])
        ):
            return True
    return False


def _switched_off(state: State, flag: str) -> State:
    """`state` after the guard: its flag off."""
    after = state.copy()
    after.vars[flag] = const(False)
    return after


def pinned(prepared: Selector, facts: Facts) -> State:
    """What `facts` pin, held where the selector reads it: the hardware and cuDNN queries'
    answers in the names TE keeps them in, each known field in its local name. What a test
    reads of a witness before any run (`may_hold`; `analysis._Strategy.guardable`)."""
    program, dialect = prepared.program, prepared.dialect
    held = {}
    for query in (COMPUTE_CAPABILITY_QUERY, CUDNN_VERSION_QUERY):
        answer = facts.calls.get(query)
        if answer is not None:
            held.update((holder, answer) for holder in program.results_of(query))
    for field, value in facts.params.items():
        held[dialect.field_expression(field)] = value
    return State(held)


def watched_versions(program: Program, flag: str, settled: Settled) -> int:
    """The bits of what `Settled.off` asks of a state besides the flag: the returned version
    variable and the flash versions' expressions, where TE dispatches on them (else none)."""
    return settled.watched & ~program.names.of(flag)


def guards_slice(
    program: Program, found: Sequence[Guard], versions: int, cut: frozenset[str]
) -> Slice:
    """The statements that may affect what each of `found` reads, and the `versions` (bits),
    up to it: one slice for the runs that stop at any of them (`Slice` with points)."""
    points: dict[int, int] = {}
    for guard in found:
        points[guard.index] = points.get(guard.index, 0) | guard.reads | versions
    return Slice(program, frozenset(), cut, points=points)


def _holds(interpreter: Interpreter, guard: Guard, state: State) -> bool:
    """Whether every condition of `guard` is definitely true in `state`."""
    return all(interpreter.eval(condition, state).truth is True for condition in guard.conditions)


def _switches_off(body: list[ast.stmt], flag: str) -> bool:
    """Whether running `body` to its end sets `flag` to a false constant (no `return` is in it,
    as none is before the guards; a `raise` ends the path: no selection)."""
    return any(
        type(stmt) is ast.Assign
        and len(stmt.targets) == 1
        and type(stmt.targets[0]) is ast.Name
        and stmt.targets[0].id == flag
        and is_falsy_constant(stmt.value)
        for stmt in body
    )
