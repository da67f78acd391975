"""Is a registry hazard reachable in a selector? Decided statically, once per witness.

For each witness of a hazard (`Hazard.witnesses()`), the selector is interpreted with only the
hazard's own inputs bound: the compute capability the hardware query answers, the inputs the
witness pins (determinism, training, dropout, head dims, ...), whether a backward will run (the
`requires_backward` field, or autograd's own answer), the backend's "package is installed" flag
(False where the versions TE's import accepts miss every affected one: `admits_affected`), its
release where the selector compares the installed version, and the module's constants.
Everything else - `NVTE_*` variables, cuDNN's answer, every other field of `AttentionParams`,
and in a run about a flash backend whether the other backends are available (`run_slice`) -
stays unknown. The hazard is GUARDED iff no reachable return of any witness can make TE run the
backend, so a guarded verdict holds whatever the rest of the environment is; otherwise it is
REACHABLE and the first witness that reaches it is reported. What a return selects: TE 1.9 - 2.1
return the backend's flag, which must be definitely off; TE 2.2+ return `use_flash_attention` and
the flash version TE dispatches on, which must not name the backend (`dispatch`). A selector
without the backend makes the hazard NOT APPLICABLE.

A reachable verdict points where a reviewer would look: at the architecture test of a filter
that handles exactly the hazard's inputs but let the witness's architecture through (TE 2.x's
FA2 head-dim allowlist containing (12, 0)), else at the line that enabled the flag.
"""

from __future__ import annotations

import ast
import functools
from typing import Sequence

from lint_plugin.engine import guard_proof
from lint_plugin.engine.absint import (
    TRUE,
    Site,
    State,
    Value,
    UNKNOWN,
    alternatives,
    const,
    join,
    one_of,
    unknown,
    with_truth,
)
from lint_plugin.engine.delegation import delegates
from lint_plugin.engine.dialect import (
    BACKWARD_FIELD,
    COMPUTE_CAPABILITY_QUERY,
    CUDNN_VERSION_QUERY,
    GRAD_MODE_QUERY,
    SELECTOR_FUNCTIONS,
    Dialect,
    find_selectors,
)
from lint_plugin.engine.dispatch import (
    FLASH_ROLES,
    FlashVersion,
    ReturnShape,
    package_facts,
    partition,
    provenance,
    return_shape,
    selecting_states,
)
from lint_plugin.engine.guardable import guard_paths
from lint_plugin.engine.indistinct import indistinct
from lint_plugin.engine.interpreter import Facts, Interpreter, Observer
from lint_plugin.engine.kernel_calls import kernel_facts, wired_validator
from lint_plugin.engine.module_scan import forget_sources, parsed_from
from lint_plugin.engine.predicates import module_functions
from lint_plugin.engine.program import Program, function_index
from lint_plugin.engine.settled import Settled
from lint_plugin.engine.slicing import Slice
from lint_plugin.engine.te_release import filtered_in_cxx, unseen_inputs
from selector_patch.records import TupleRecord
from selector_patch.registry import HAZARDS, PACKAGE_FIELD, Hazard
from selector_patch.roles import FLASH_FALLBACK, GATED_FLAGS
from selector_patch.scenario import INPUTS, OPTIONAL_FEATURES, Scenario, expressible, sm_name

#: No facts beyond a witness's own.
NOTHING = Facts()
#: The dependency that marks a value as computed from the device's compute capability.
COMPUTE_CAPABILITY = "compute_capability"


#: What a witness run answers: why the backend may still run at its returns (`_enabled`), and
#: the filters that let its architecture through (`_AdmittingFilters.found`).
Outcome = tuple[list[Value], list[ast.Compare]]


class HazardVerdict(TupleRecord):
    hazard_id: str
    function: str
    applicable: bool
    reachable: bool
    #: The first witness that reaches the backend (None when guarded or not applicable).
    witness: Scenario | None
    #: Where a reviewer would point (1-based line, 0-based column), for a reachable hazard.
    line: int | None
    col: int | None
    detail: str


class Selector:
    """One selector function with what every analysis of it shares."""

    def __init__(self, module: ast.Module, function: ast.FunctionDef) -> None:
        self.module = module
        self.function = function
        self.program = Program(function)
        self.dialect = Dialect(function, module)
        self._witnesses: dict[int, tuple[Hazard, list[Scenario]]] = {}
        self._facts: dict[tuple[int, ...], tuple[tuple[object, ...], Facts]] = {}
        self._settled: dict[str, Settled | None] = {}
        self._run_slices: dict[tuple[str, ...], tuple[Slice, frozenset[str]]] = {}
        self._guards: dict[str, tuple[guard_proof.Guard, ...]] = {}
        self._guards_slices: dict[str, Slice] = {}

    @functools.cached_property
    def shape(self) -> ReturnShape | None:
        """How its returns name the flash selection (TE 2.2+), if they do."""
        return return_shape(self.program, self.dialect)

    def witnesses(self, hazard: Hazard) -> list[Scenario]:
        """The hazard's distinct witnesses for this selector (shared by every run about it)."""
        cached = self._witnesses.get(id(hazard))
        if cached is None or cached[0] is not hazard:
            cached = self._witnesses[id(hazard)] = (
                hazard,
                _distinct_witnesses(hazard, self.dialect),
            )
        return cached[1]

    def facts(self, hazard: Hazard, witnesses: Sequence[Scenario], given: Facts = NOTHING) -> Facts:
        """`witness_facts`, made once per hazard, witnesses and given facts: the strategy asks
        for a witness's facts to try its proofs on it, and again to run it. Told apart by
        identity (the witnesses are mostly this selector's own, `witnesses`), and kept alive
        with the facts, so that no identity is another object's."""
        asked = (hazard, given, *witnesses)
        key = tuple(map(id, asked))
        cached = self._facts.get(key)
        if cached is None or any(mine is not theirs for mine, theirs in zip(cached[0], asked)):
            facts = witness_facts(hazard, self.dialect, witnesses, given)
            cached = self._facts[key] = (asked, facts)
        return cached[1]

    @functools.cached_property
    def plain_call(self) -> list[State]:
        """The returns of one run of a plain call (`plain_call_facts`): where each flag's
        filters can fire whatever the inputs a witness pins. The coverage rules read it, and
        `_Strategy` asks it whether a hazard's inputs have a filter at all."""
        facts = plain_call_facts(self.dialect)
        return Interpreter(self.program, facts, relevant=self.relevant).run()

    def filters(self, flag: str) -> list[Site]:
        """The statements that can switch `flag` off in a plain call, as provenance sites.

        A switch that depends on another backend's flag (TE 1.x turning FlashAttention off
        because FusedAttention is available on Hopper) is a preference between backends, not a
        filter.
        """
        others = frozenset(self.dialect.roles().values()) - {flag}
        return [
            site
            for state in self.plain_call
            if flag in state.vars
            for site in state.vars[flag].disablers
            if not site.deps & others
        ]

    def settled(self, role: str) -> Settled | None:
        """Where a run about `role`'s backend may stop (`settled`), made once per role; None
        where none may: FA2 in a selector that returns its flash version, since TE runs
        flash-attn 2's code path for any version that is not FA3's or FA4's."""
        if role not in self._settled:
            flag, shape = self.dialect.flag(role), self.shape if role in FLASH_ROLES else None
            if shape is None:
                self._settled[role] = Settled(self.program, flag)
            elif role == FLASH_FALLBACK:
                self._settled[role] = None
            else:
                versions = {r: v for r in FLASH_ROLES if (v := self.dialect.version(r))}
                self._settled[role] = Settled(self.program, flag, role, shape.version, versions)
        return self._settled[role]

    def guards(self, role: str) -> tuple[guard_proof.Guard, ...]:
        """The `if`s that may prove a run about `role` guarded alone (`guard_proof`)."""
        found = self._guards.get(role)
        if found is None:
            settled = self.settled(role)
            flag = self.dialect.flag(role)
            found = (
                ()
                if settled is None
                else guard_proof.guards(self.program, self.dialect, flag, settled)
            )
            self._guards[role] = found
        return found

    def guards_slice(self, role: str) -> Slice:
        """`guard_proof.guards_slice` of `role`'s guards, made once per role."""
        found = self._guards_slices.get(role)
        if found is None:
            flag, settled = self.dialect.flag(role), self.settled(role)
            versions = guard_proof.watched_versions(self.program, flag, settled)
            cut = self.dialect.backend_flags
            found = guard_proof.guards_slice(self.program, self.guards(role), versions, cut)
            self._guards_slices[role] = found
        return found

    @functools.cached_property
    def relevant(self) -> Slice:
        """The statements that can affect a backend flag or the flash selection: the plain
        call's slice, and that of a run about a backend that is not a flash one."""
        return self._slice(self.dialect.backend_flags)

    def run_slice(self, role: str, facts: Facts) -> tuple[Slice, Facts]:
        """The slice a witness run about `role` executes, and the run's `facts`: with the flags
        it never binds and reads as unknown (`Facts.unbound`, `Facts.opaque`).

        A run about a flash backend takes the other backends' availability as unknown: their
        flags read as unknown, and what only they are computed from does not run (on TE 2.20.2,
        cuDNN's query and its arguments, the score_mod reasons: 160 - 220 statements a run
        instead of 330 - 500). A run that finds the backend off with them unknown finds it off
        whatever they hold, so a guarded verdict stays proven. The price is where a flash filter
        decides on another backend's flag that a full run would know: it is undecided here, and
        the backend may read as reachable where it is not (a false positive, never a false
        negative). TE reads them where it prefers FusedAttention (`if use_flash_attention and
        use_fused_attention and ...: use_flash_attention = False`), and without cuDNN's answer
        FusedAttention's flag is never known on there; known off, it leaves the flash flag as
        it was, where unknown leaves it possibly on: the same verdict. A fork that switched
        FusedAttention on with a constant, or a flash backend off where FusedAttention is
        known off, would pay that price. One slice serves every flash role, since each asks
        which flash version is returned and so reads every flash flag.

        A run about another backend (FusedAttention, TE's own later fixes mostly) cuts the
        others alike, the flash ones included: their filters (FA4's head dims, FA3's
        FP8 and softcap checks) then do not run, 280 statements a run instead of 460 on TE
        2.20.2. Where TE reads a flash flag to switch FusedAttention off (`if
        use_flash_attention: use_fused_attention = False` when it selects), a witness run
        never knows it on anyway: the flash packages' installed flags are bound only in runs
        about their own backend.
        """
        roles = FLASH_ROLES if role in FLASH_ROLES else (role,)
        cut = self._run_slices.get(roles)
        if cut is None:
            cut = self._run_slices[roles] = self._cut_slice(roles)
        relevant, others = cut
        return relevant, facts._replace(opaque=facts.opaque | others, unbound=others)

    def _cut_slice(self, roles: tuple[str, ...]) -> tuple[Slice, frozenset[str]]:
        """`run_slice` of `roles`: their flags and what those are `and`-ed from are the roots
        (with the flash selection for flash roles), the other backend flags are cut."""
        dialect = self.dialect
        flags = {flag for role, flag in dialect.roles().items() if role in roles}
        roots = flags.union(*(dialect.sources(flag) for flag in flags))
        others = dialect.backend_flags - roots
        if roles is FLASH_ROLES:
            return self._slice(roots, others), others
        return Slice(self.program, frozenset(roots), others), others

    def _slice(self, flags: frozenset[str] | set[str], cut: frozenset[str] = frozenset()) -> Slice:
        """The slice of `flags` and the flash selection, the names in `cut` read as unknown."""
        roots = set(flags)
        if self.shape is not None:
            roots.update((self.shape.gate, self.shape.version))
        return Slice(self.program, frozenset(roots), cut)


@functools.lru_cache(maxsize=2)
def selector(module: ast.Module, function: ast.FunctionDef) -> Selector:
    """The prepared selector; cached so hazards and coverage rules share one preparation.

    Small on purpose: entries keep whole trees alive, and flake8 moves on file by file.
    """
    return Selector(module, function)


def release() -> None:
    """Forget every prepared selector, and with them the trees the caches keep alive.

    The caches serve the questions asked of one tree (hazards, coverage, anchors). flake8 runs
    the plugin file by file, and `plan_insertions` parses anew each call, so neither ever comes
    back to a tree: each releases when it is done. What an analysis kept costs no more to free
    then than at interpreter exit, where each of the collections Python makes on its way out
    would first traverse it: on TE 2.20.2's selector a flake8 process runs 13 M instructions
    fewer (of the 491 M TEA added to it), `codemods.apply --check` 40 M (of 781 M).
    """
    selector.cache_clear()
    delegates.cache_clear()
    function_index.cache_clear()
    module_functions.cache_clear()
    forget_sources()


def compute_capability(*capabilities: tuple[int, int] | None) -> dict[str, Value]:
    """The hardware query's answer as a call fact: known (one of `capabilities`), or unknown
    (`None` among them) but still tracked."""
    deps = frozenset((COMPUTE_CAPABILITY,))
    if None in capabilities:
        return {COMPUTE_CAPABILITY_QUERY: unknown(deps)}
    return {COMPUTE_CAPABILITY_QUERY: one_of((tuple(c) for c in capabilities), deps)}


def plain_call_facts(dialect: Dialect) -> Facts:
    """Optional features at their dataclass defaults, the plain call's inputs unknown."""
    plain = dialect.input_fields()
    defaults = {
        field: const(value, frozenset((field,)))
        for field, value in dialect.param_defaults.items()
        if field not in plain
    }
    return Facts(
        params=defaults,
        calls=compute_capability(None),
        opaque=frozenset(dialect.backend_flags),
    )


def witness_inputs(hazard: Hazard) -> tuple[str, ...]:
    """The inputs a witness pins: the triggers', and those its shapes set (eval, say)."""
    named = [condition.input for condition in hazard.triggers]
    named += [name for shape in hazard.witness_shapes for name in shape if name in INPUTS]
    return tuple(dict.fromkeys(named))


def witness_params(hazard: Hazard, dialect: Dialect, witness: Scenario) -> dict[str, object]:
    """The `AttentionParams` fields behind the witness's inputs, valued as in `witness`."""
    return bound_params(witness_inputs(hazard), dialect, witness)


def bound_params(inputs: Sequence[str], dialect: Dialect, witness: Scenario) -> dict[str, object]:
    """The `AttentionParams` fields behind `inputs`, valued as in `witness`."""
    params: dict[str, object] = {}
    for name in inputs:
        params.update(dialect.bindings(name, witness))
    return params


def witness_version(hazard: Hazard, dialect: Dialect, witness: Scenario) -> str | None:
    """The kernel release a witness pins: where the selector compares the backend's installed
    version (a guard for a defect a later release fixed does), else none - any will do."""
    if not dialect.compares_version(hazard.backend):
        return None
    return getattr(witness, PACKAGE_FIELD[hazard.backend])


def admits_affected(hazard: Hazard, dialect: Dialect) -> bool:
    """Whether TE's import can call the backend's package installed in a version with the defect.

    A witness runs with the package installed, but a release whose version bounds leave out
    every affected version (`Dialect.admitted_versions`) imports none of them: for it, an
    affected package is as good as absent, and its installed flag stays False.
    """
    admitted = dialect.admitted_versions(hazard.backend)
    return admitted is None or hazard.evidence.affects_some(*admitted)


def witness_facts(
    hazard: Hazard, dialect: Dialect, witnesses: Sequence[Scenario], given: Facts = NOTHING
) -> Facts:
    """What a run of `witnesses` of `hazard` knows (`joint_facts`)."""
    return joint_facts([(hazard, witness) for witness in witnesses], dialect, given)


def joint_facts(
    items: Sequence[tuple[Hazard, Scenario]], dialect: Dialect, given: Facts = NOTHING
) -> Facts:
    """What a run of witnesses of hazards of one backend knows: each item's inputs, over
    whatever else is `given`.

    One witness binds each of its hazard's inputs to its value. Several, interpreted together,
    bind each input to the choice of their values (inputs bound by only some of them stay
    unknown): a run that over-approximates each of theirs, since nothing ties one input's choice
    to another's.
    """
    backend = items[0][0].backend
    bound = [witness_params(hazard, dialect, witness) for hazard, witness in items]
    params = {
        name: one_of((values[name] for values in bound), frozenset((name,)))
        for name in set(bound[0]).intersection(*bound[1:])
    }
    capabilities = (witness.compute_capability for _, witness in items)
    cudnn = {}
    if any("cudnn_version" in witness_inputs(hazard) for hazard, _ in items):
        versions = (witness.cudnn_version for _, witness in items)
        cudnn = {CUDNN_VERSION_QUERY: one_of(versions, frozenset(("cudnn_version",)))}
    backward = (witness.backward for _, witness in items)
    grad_mode = one_of(backward, frozenset((BACKWARD_FIELD,)))
    validator, validated = wired_validator(dialect.module_text_names), {}
    if given.kernels:  # the miner's runs alone: flake8's never load the kernels
        validator, validated = kernel_facts([w for _, w in items], dialect.module_text_names)
    names = {**dialect.torch_dtypes, **dialect.module_names, **validator}
    flag = dialect.flag(backend)
    if flag in GATED_FLAGS:  # a global TE's import sets where the package is installed
        names[flag] = TRUE
    installed = dialect.installed(backend)
    if installed:
        admitted = any(admits_affected(hazard, dialect) for hazard, _ in items)
        names[installed] = TRUE if admitted else const(False)
    version = dialect.version(backend)
    pinned = {witness_version(hazard, dialect, witness) for hazard, witness in items}
    if version and None not in pinned:
        names[version] = one_of(FlashVersion(backend, True, v) for v in pinned)
    return Facts(
        params={**given.params, **params},
        calls={
            **given.calls,
            **compute_capability(*capabilities),
            **cudnn,
            GRAD_MODE_QUERY: grad_mode,
            **validated,
        },
        names={**names, **given.names},
        functions=dialect.module_functions,
        predicates=dialect.module_predicates,
        pure_functions=dialect.module_pure_functions,
    )


class _AdmittingFilters(Observer):
    """Finds filters that handle the hazard's inputs but let the witness's architecture pass.

    Such a filter is an `if` that can switch the flag off, whose condition reads a trigger
    input and the compute capability, and which *would* fire for this witness - flag on, every
    trigger as bound - were it not for an architecture test that came out False. Its
    architecture test is what a reviewer must change.
    """

    def __init__(self, program: Program, flag: str, triggers: frozenset[str]) -> None:
        self.program = program
        self.flag = flag
        self.triggers = triggers
        self.found: list[ast.Compare] = []

    def on_if(self, interpreter: Interpreter, node: ast.If, test: Value, state: State) -> None:
        flag = state.vars.get(self.flag)
        if (
            test.truth is True
            or flag is None
            or flag.truth is False
            or COMPUTE_CAPABILITY not in test.deps
            or not (test.deps | state.path) & self.triggers
            or self.flag not in self.program.body_kills(node)
        ):
            return
        interpreter.trace = []
        interpreter.eval(node.test, state.copy())
        trace, interpreter.trace = interpreter.trace, None
        blocking = [
            compare
            for compare, value in trace
            if value.truth is False and COMPUTE_CAPABILITY in value.deps
        ]
        if not blocking:
            return
        # The flag on, and every blocking comparison true.
        forced = state.copy()
        forced.vars[self.flag] = with_truth(flag, True)
        interpreter.overrides = {compare: TRUE for compare in blocking}
        try:
            would_fire = interpreter.eval(node.test, forced).truth is True
        finally:
            interpreter.overrides = {}
        if would_fire:
            self.found.append(blocking[0])


class _Strategy:
    """How the witness runs of several hazards are ordered and shared, learnt as they run.

    - Every run that finds the backend off is kept as a proof (`proofs`): a later witness whose
      facts it covers (`covers`) is guarded without a run of its own - a hazard declared on
      an architecture beside another one with the same inputs, say.
    - Architectures an architecture filter alone switches a backend off on are judged once for
      every hazard of that backend (`_clear`).
    - Consecutive architectures at which no witness has reached a backend yet are first
      interpreted together. Where a witness did reach one (`leaky`), the selector most likely
      lets the next hazard through there too, so that architecture's first witness runs alone
      first (one run reports it); so it does everywhere once a together run has failed
      (`witness_first`).
    - Once a hazard is found guarded, the selector most likely carries guards, so a later
      hazard's witnesses are first all tried in one run, as `expect_guarded` does (`all_first`),
      unless one of its architectures is leaky.
    - A hazard whose inputs no filter of its backend reads (`unfiltered`) will most likely
      reach it: its witnesses run alone first.
    - So will one that no filter could guard (`guardable`): its first witness runs alone first.
    """

    def __init__(self, hazards: Sequence[Hazard], given: Facts, te_version: str | None) -> None:
        self.hazards = hazards
        self.given = given
        #: The release the analysed tree records, for fixes TE made in its C++ (`te_release`).
        self.te_version = te_version
        self.leaky: set[tuple[int, int]] = set()
        self.witness_first = False
        self.all_first = False
        self._proofs: dict[tuple[ast.FunctionDef, str], list[Facts]] = {}
        self._guard_paths: dict[tuple[ast.FunctionDef, int], list[tuple[ast.expr, ...]]] = {}
        self._outcomes: list[tuple[tuple[ast.FunctionDef, str, frozenset[str], Facts], Outcome]] = (
            []
        )

    def proofs(self, prepared: Selector, backend: str) -> list[Facts]:
        """The facts of every run that found the backend off in this function, the joint run of
        `_clear` first."""
        key = (prepared.function, backend)
        proofs = self._proofs.get(key)
        if proofs is None:
            proofs = self._proofs[key] = []
            self._clear(prepared, backend)
        return proofs

    def proven(self, prepared: Selector, hazard: Hazard, witness: Scenario) -> bool:
        """Whether a kept proof covers `witness` (`covers`): it is guarded, no run needed.
        A proof of other architectures cannot, and is passed over before the witness's facts
        are made (a hazard's witnesses are mostly on architectures no proof is about)."""
        proofs = [
            proof
            for proof in self.proofs(prepared, hazard.backend)
            if covers_architecture(proof, witness.compute_capability)
        ]
        if not proofs:
            return False
        facts = prepared.facts(hazard, [witness], self.given)
        return any(covers(proof, facts) for proof in proofs)

    def unfiltered(self, prepared: Selector, hazard: Hazard) -> bool:
        """Whether no filter of the hazard's backend reads one of its trigger inputs in a plain
        call (`Selector.filters`: the run the coverage rules make anyway).

        Not said of a trigger on an optional feature (`num_splits`): a plain call holds it at
        its default, where the filters for it do not fire.
        """
        inputs = [condition.input for condition in hazard.triggers]
        if set(inputs) & set(OPTIONAL_FEATURES):
            return False
        dialect, witness = prepared.dialect, prepared.witnesses(hazard)[0]
        deps = {field for name in inputs for field in dialect.bindings(name, witness)}
        if "backward" in inputs:
            deps.add(BACKWARD_FIELD)
        flag = dialect.flag(hazard.backend)
        return not any(site.deps & deps for site in prepared.filters(flag))

    def outcome(
        self, prepared: Selector, flag: str, triggers: frozenset[str], facts: Facts
    ) -> Outcome | None:
        """What a witness run of `flag` with these `facts` (and these trigger inputs, which the
        filters it reports are judged by) answered, where one ran whose facts differ only in
        inputs the selector cannot tell apart (`indistinct`): TEA004's witness after TEA003's."""
        for (function, its_flag, its_triggers, its_facts), outcome in self._outcomes:
            if (
                function is prepared.function
                and its_flag == flag
                and its_triggers == triggers
                and _alike(prepared.program, its_facts, facts)
            ):
                return outcome
        return None

    def ran(
        self,
        prepared: Selector,
        flag: str,
        triggers: frozenset[str],
        facts: Facts,
        outcome: Outcome,
    ) -> Outcome:
        """Keep a witness run's outcome (`outcome`)."""
        self._outcomes.append(((prepared.function, flag, triggers, facts), outcome))
        return outcome

    def guardable(self, prepared: Selector, hazard: Hazard, witnesses: list[Scenario]) -> bool:
        """Whether some filter could prove each of `witnesses` guarded: an `if` that can switch
        the backend's flag off (or a flag it is `and`-ed from) under tests reading one of the
        hazard's trigger inputs (`guardable.guard_paths`), none of which is false for the
        witness's architecture and inputs, and none of which reads an input the witness leaves
        unknown (such a test is never true for all of them)."""
        key = (prepared.function, id(hazard))
        paths = self._guard_paths.get(key)
        if paths is None:
            paths = self._guard_paths[key] = _guard_paths(prepared, hazard)
        if not paths:
            return False
        program, dialect = prepared.program, prepared.dialect
        for witness in witnesses:
            facts = prepared.facts(hazard, [witness], self.given)
            held = guard_proof.pinned(prepared, facts)
            unknown_inputs = program.names.bits(
                dialect.field_expression(field)
                for field in dialect.param_fields - facts.params.keys()
            )
            interpreter = Interpreter(program, facts)
            if not any(
                all(
                    program.calls_helper(test) or interpreter.eval(test, held).truth is not False
                    for test in path
                )
                for path in paths
                if not any(program.read_bits(test) & unknown_inputs for test in path)
            ):
                return False
        return True

    def _clear(self, prepared: Selector, backend: str) -> None:
        """Judge at once every hazard of the backend where it cannot run whatever the inputs.

        Where a top-level filter that reads the architecture alone switches the backend off
        (`_architecture_filters`), the witnesses of every hazard of the backend on those
        architectures run together once. That run binds only what they all share - the
        architecture, the package - so when it finds the backend off, its proof covers each of
        them. Tried wherever two witnesses or more are there, of one hazard or several (TE
        2.20.2's FA4 on SM8x: eight witnesses, four architectures): where the filter does what
        it predicts, one run replaces theirs; where it does not (the flag switched on again
        later), that run is lost.
        """
        flag = prepared.dialect.flag(backend)
        hazards = [
            hazard
            for hazard in self.hazards
            if hazard.backend == backend
            and _decided_unrun(prepared, hazard, self.te_version) is None
        ]
        archs = {w.compute_capability for h in hazards for w in prepared.witnesses(h)}
        filtered = _architecture_filters(prepared, flag, archs)
        items = [
            (hazard, witness)
            for hazard in hazards
            for witness in prepared.witnesses(hazard)
            if witness.compute_capability in filtered
        ]
        if len(items) < 2:
            return
        facts = joint_facts(items, prepared.dialect, self.given)
        if not _enabled(prepared, backend, flag, facts):
            self.keep(prepared, backend, facts)

    def keep(self, prepared: Selector, backend: str, facts: Facts) -> None:
        """Keep the facts of a run that found the backend off, as a proof (the joint run of
        `_clear` is not made for it: where hazards are proven as they come, it need not be)."""
        self._proofs.setdefault((prepared.function, backend), []).append(facts)


def _guard_paths(prepared: Selector, hazard: Hazard) -> list[tuple[ast.expr, ...]]:
    """`guardable.guard_paths` for the hazard: its backend's flag and what that is `and`-ed
    from, the names derived from its trigger inputs."""
    flag = prepared.dialect.flag(hazard.backend)
    flags = {flag, *prepared.dialect.sources(flag)}
    return guard_paths(prepared.program, flags, _trigger_names(prepared, hazard))


def _trigger_names(prepared: Selector, hazard: Hazard) -> set[str]:
    """The local names derived from the hazard's trigger inputs (the backward's signal among
    them): what a filter for it reads."""
    dialect, program = prepared.dialect, prepared.program
    witness = prepared.witnesses(hazard)[0]
    fields = {
        f for condition in hazard.triggers for f in dialect.bindings(condition.input, witness)
    }
    if any(condition.input == "backward" for condition in hazard.triggers):
        fields |= {BACKWARD_FIELD, *program.results_of(GRAD_MODE_QUERY)}
    if any(condition.input == "cudnn_version" for condition in hazard.triggers):
        fields |= program.results_of(CUDNN_VERSION_QUERY)
    return program.derived_names(fields)


def _proven_by_guard(
    prepared: Selector, hazard: Hazard, witnesses: list[Scenario], given: Facts
) -> Facts | None:
    """The facts of `witnesses` where one guard proves them all guarded (`guard_proof`)."""
    if not prepared.guards(hazard.backend):
        return None
    triggers = prepared.program.names.bits(_trigger_names(prepared, hazard))
    facts = prepared.facts(hazard, witnesses, given)
    run_facts = facts
    if hazard.backend in FLASH_ROLES and prepared.shape is not None:
        run_facts = package_facts(facts, prepared.dialect, {hazard.backend: True})
    return facts if guard_proof.proven(prepared, hazard.backend, triggers, run_facts) else None


def _alike(program: Program, mine: Facts, theirs: Facts) -> bool:
    """Whether runs with these facts answer alike: the same but for known `AttentionParams`
    fields the selector cannot tell apart (`indistinct`)."""
    if mine.params.keys() != theirs.params.keys() or mine[1:] != theirs[1:]:
        return False
    for name, value in mine.params.items():
        other = theirs.params[name]
        if value != other and (
            value.const is UNKNOWN
            or other.const is UNKNOWN
            or value.deps != other.deps
            or not indistinct(program, name, (value.const, other.const))
        ):
            return False
    return True


def covers_architecture(wide: Facts, architecture: tuple[int, int]) -> bool:
    """Whether `covers(wide, narrow)` may hold for a `narrow` on `architecture`: what `covers`
    asks of the hardware query's answer alone."""
    value = wide.calls.get(COMPUTE_CAPABILITY_QUERY)
    if value is None:
        return True
    allowed = alternatives(value)
    if allowed is None:
        return value.truth is None
    return any(type(a) is tuple and a == architecture for a in allowed)


def covers(wide: Facts, narrow: Facts) -> bool:
    """Whether every fact of `wide` holds in `narrow` too, or `narrow` pins it to one of the
    choices `wide` allows. A run binds only what its facts say, so a run of `wide` then
    over-approximates one of `narrow`, and `wide` finding the backend off proves it off for
    `narrow`. Choices compare with their types, as `choice_set` keeps them apart."""
    pairs = ((wide.params, narrow.params), (wide.calls, narrow.calls), (wide.names, narrow.names))
    for known, asked in pairs:
        for name, value in known.items():
            mine = asked.get(name)
            if mine is value or (mine is not None and _same(mine, value)):
                continue
            allowed = alternatives(value)
            if allowed is None:
                if value.truth is None:
                    continue  # anything at all
                return False
            pinned = None if mine is None else alternatives(mine)
            if pinned is None or not all(
                any(type(a) is type(b) and a == b for b in allowed) for a in pinned
            ):
                return False
    return True


def _same(mine: Value, value: Value) -> bool:
    """Whether two facts bind one thing: equal in every field, their constants and choices of
    the same types too (`1 == True`, which a run tells apart). Each witness's facts are made
    anew, so a fact that is neither pinned nor a choice (the unknown but installed FA4 head-dim
    validator every FA4 run binds) is an equal object, never the same one."""
    if mine != value:
        return False
    mine_all, all_of = alternatives(mine), alternatives(value)
    return mine_all is None or all(
        any(type(a) is type(b) and a == b for b in all_of) for a in mine_all
    )


def _architecture_filters(
    prepared: Selector, flag: str, archs: set[tuple[int, int]]
) -> frozenset[tuple[int, int]]:
    """Of `archs`, those a top-level `if` switches `flag` off on by its test on the hardware
    query's answer alone (TE's "FA4 does not support SM8x"): where a joint run should decide.

    Only a prediction: the flag may be switched on again, or the selection made without it;
    the joint run (`_Strategy._clear`) is what proves it.
    """
    program = prepared.program
    holders = program.results_of(COMPUTE_CAPABILITY_QUERY)
    holder_bits, flag_bit = program.names.bits(holders), program.names.of(flag)
    filters = [
        node
        for node in program.function.body
        if type(node) is ast.If
        and program.read_bits(node.test) & holder_bits
        and not program.calls_helper(node.test)
        and any(
            program.kill_bits(stmt) & flag_bit for stmt in node.body if not program.blocks(stmt)
        )
    ]
    if not filters:
        return frozenset()
    interpreter = Interpreter(program, NOTHING)
    deps = frozenset((COMPUTE_CAPABILITY,))
    return frozenset(
        arch
        for arch in archs
        if any(
            interpreter.eval(node.test, State({h: const(arch, deps) for h in holders})).truth
            is True
            for node in filters
        )
    )


def analyze_hazards(
    module: ast.Module,
    function: ast.FunctionDef,
    hazards: Sequence[Hazard],
    given: Facts = NOTHING,
    *,
    expect_guarded: bool = False,
    te_version: str | None = None,
) -> list[HazardVerdict]:
    """The verdicts on several hazards in one selector function, in order, sharing what their
    runs share (the prepared selector, its slice, `_Strategy`). `te_version` is the release the
    analysed tree records, if any: where its C++ already filters a TE fix, that one is guarded."""
    strategy = _Strategy(hazards, given, te_version)
    return [_combined(module, function, hazard, expect_guarded, strategy) for hazard in hazards]


def analyze_hazard(
    module: ast.Module,
    function: ast.FunctionDef,
    hazard: Hazard,
    given: Facts = NOTHING,
    *,
    expect_guarded: bool = False,
) -> HazardVerdict:
    """The verdict on one hazard in one selector function (`analyze_hazards`)."""
    return analyze_hazards(module, function, [hazard], given, expect_guarded=expect_guarded)[0]


def _combined(
    module: ast.Module,
    function: ast.FunctionDef,
    hazard: Hazard,
    expect_guarded: bool,
    strategy: _Strategy,
) -> HazardVerdict:
    """Judged in the functions that hold the selector's filters (`delegation`): reachable in
    one of them is reachable."""
    verdicts = [
        _analyze_function(module, target, hazard, expect_guarded, strategy)
        for target in delegates(module, function)
    ]
    reachable = [verdict for verdict in verdicts if verdict.reachable]
    applicable = [verdict for verdict in verdicts if verdict.applicable]
    return (reachable or applicable or verdicts)[0]


def _analyze_function(
    module: ast.Module,
    function: ast.FunctionDef,
    hazard: Hazard,
    expect_guarded: bool,
    strategy: _Strategy,
) -> HazardVerdict:
    """The verdict on one hazard in one function that holds filters.

    The strategy's `given` adds facts to every witness run (the other fields of a concrete
    call, say): the verdict then holds for the environments they describe only. By default
    everything but the hazard's own inputs stays unknown.

    Witnesses are tried in order, and the first that reaches the backend is the one reported.
    Several are first interpreted together where that may decide (`guarded_together`): one run
    that finds the backend off proves them all guarded, else they run one by one, in the order
    `_Strategy` has learnt. A caller that expects GUARDED (the codemod checking its own guard)
    sets `expect_guarded`: all the witnesses are then first tried in one run. The verdict is the
    same either way; only the cost is not.
    """
    prepared = selector(module, function)
    dialect = prepared.dialect
    role = hazard.role
    flag = dialect.flag(hazard.backend)
    decided = _decided_unrun(prepared, hazard, strategy.te_version)
    if decided is not None:
        applicable, detail = decided
        return HazardVerdict(hazard.id, function.name, applicable, False, None, None, None, detail)
    given = strategy.given
    witnesses = prepared.witnesses(hazard)

    def by_guard(group: list[Scenario]) -> bool:
        """`_proven_by_guard`, its facts kept as a proof where it holds."""
        proof = _proven_by_guard(prepared, hazard, group, given)
        if proof is not None:
            strategy.keep(prepared, hazard.backend, proof)
        return proof is not None

    # Where it is likely guarded, the cheapest proof, one guard's (`guard_proof`): before the
    # kept proofs where guards are expected (`--check`), else on the witnesses they leave.
    if expect_guarded and by_guard(witnesses):
        pending = []
    else:
        pending = [w for w in witnesses if not strategy.proven(prepared, hazard, w)]
        if pending and not expect_guarded and strategy.all_first and by_guard(pending):
            pending = []
    failed: set[tuple[Scenario, ...]] = set()

    def together(group: list[Scenario]) -> bool:
        """`guarded_together`, its facts kept as a proof where it holds; a group it failed on
        does not run again."""
        key = tuple(group)
        if key in failed:
            return False
        if guarded_together(module, function, hazard, group, given):
            strategy.keep(prepared, hazard.backend, prepared.facts(hazard, group, given))
            return True
        failed.add(key)
        strategy.witness_first = True
        return False

    def reaches(witness: Scenario) -> HazardVerdict | None:
        facts = prepared.facts(hazard, [witness], given)
        triggers = frozenset(witness_params(hazard, dialect, witness))
        outcome = strategy.outcome(prepared, flag, triggers, facts)
        if outcome is None:
            observer = _AdmittingFilters(prepared.program, flag, triggers)
            enabled = _enabled(prepared, hazard.backend, flag, facts, observer)
            outcome = strategy.ran(prepared, flag, triggers, facts, (enabled, observer.found))
        enabled, found = outcome
        if not enabled:
            strategy.keep(prepared, hazard.backend, facts)
            return None
        strategy.leaky.add(witness.compute_capability)
        value = functools.reduce(join, enabled)
        return _reachable(hazard, dialect, function, flag, witness, value, found)

    leaky = strategy.leaky
    unfiltered = bool(pending) and not expect_guarded and strategy.unfiltered(prepared, hazard)
    if (
        pending
        and not (expect_guarded or unfiltered)
        and not any(w.compute_capability in leaky for w in pending)  # they run alone first
        and not strategy.guardable(prepared, hazard, pending)
    ):
        found = reaches(pending[0])
        if found is not None:
            return found
        pending = pending[1:]
    first = expect_guarded or (
        strategy.all_first
        and not unfiltered
        and not any(w.compute_capability in leaky for w in pending)
    )
    if first and len(pending) > 1 and together(pending):
        pending = []
    for block in _blocks(pending, leaky):
        if len(block) > 1 and not unfiltered and together([w for group in block for w in group]):
            continue
        for group in block:
            leading = unfiltered or strategy.witness_first or group[0].compute_capability in leaky
            if len(group) > 1 and leading:  # its first witness runs alone first
                found = reaches(group[0])
                if found is not None:
                    return found
                group = group[1:]
            if len(group) > 1 and together(group):
                continue
            for witness in group:
                found = reaches(witness)
                if found is not None:
                    return found
    strategy.all_first = True
    archs = ", ".join(sm_name(arch) for arch in hazard.architectures)
    return HazardVerdict(
        hazard.id, function.name, True, False, None, None, None,
        f"{role.display} (`{flag}`) is selected at no return of the {len(witnesses)} witnesses"
        f" ({archs})",
    )  # fmt: skip


def _decided_unrun(
    prepared: Selector, hazard: Hazard, te_version: str | None
) -> tuple[bool, str] | None:
    """(applicable, why) for a hazard judged without a witness run, else None: the selector
    has no such backend, or cannot ask for one of its inputs, or its release never makes the
    request (`TeFix.te_reachable`), or its code cannot test one (an FP8 recipe's predicate the
    selector never calls), or the tree's release filters it in its C++
    (`te_release`). Such a hazard costs no run, nor a place in another's joint run
    (`_Strategy._clear`)."""
    dialect, role = prepared.dialect, hazard.role
    if dialect.flag(hazard.backend) is None:
        return (
            False,
            f"no {role.display} backend: the selector binds none of {', '.join(role.flags)}",
        )
    absent = [
        condition.input
        for condition in hazard.triggers
        if not expressible(condition.input, dialect.param_fields)
    ]
    if absent:
        return False, f"no `{absent[0]}` input: the selector's AttentionParams cannot ask for it"
    never = hazard.never_made(te_version)
    if never:
        return False, never
    unseen = unseen_inputs(hazard, dialect, te_version)
    if unseen:
        return False, (
            f"unguardable here: the selector's code has no {unseen[0]} to test; `verify` and"
            " the runtime patch judge it"
        )
    filtered = filtered_in_cxx(hazard, te_version)
    return None if filtered is None else (True, filtered)


def guarded_together(
    module: ast.Module,
    function: ast.FunctionDef,
    hazard: Hazard,
    witnesses: Sequence[Scenario] | None = None,
    given: Facts = NOTHING,
) -> bool:
    """Whether one run of `witnesses` (default: all the hazard's) finds the backend off.

    That run binds each input to the choice of the witnesses' values (`witness_facts`), so it
    covers each witness's own run: True proves them all guarded. False proves nothing; what
    ties one input to another within a witness (head dims equal or not, say) is lost.
    """
    targets = delegates(module, function)
    if targets != (function,):
        return all(guarded_together(module, t, hazard, witnesses, given) for t in targets)
    prepared = selector(module, function)
    flag = prepared.dialect.flag(hazard.backend)
    if flag is None:
        return False
    if witnesses is None:
        witnesses = prepared.witnesses(hazard)
    facts = prepared.facts(hazard, witnesses, given)
    return not _enabled(prepared, hazard.backend, flag, facts)


def _enabled(
    prepared: Selector, role: str, flag: str, facts: Facts, observer: Observer | None = None
) -> list[Value]:
    """Why the backend may still run at the returns of one witness (empty: it cannot).

    A selector that returns its flash version is asked what TE dispatches on (`dispatch`);
    otherwise the backend's flag at a return is the selection. A run ends where the answer is
    settled (`settled`).
    """
    shape = prepared.shape if role in FLASH_ROLES else None
    settled = prepared.settled(role)
    stop = None if settled is None else settled.off
    relevant, facts = prepared.run_slice(role, facts)
    if shape is None:
        interpreter = Interpreter(prepared.program, facts, observer, relevant)
        returns = interpreter.run(stop=stop)
        return [value for state in returns if (value := _flag_at(state, flag, facts)) is not None]
    split = None if shape.split_at is None else (shape.split_at, partition(shape.flags.values()))
    pending: list[dict[str, bool | None]] = [{role: True}]
    while pending:
        installed = pending.pop()
        run_facts = package_facts(facts, prepared.dialect, installed)
        interpreter = Interpreter(prepared.program, run_facts, observer, relevant)
        returns = interpreter.run(split=split, stop=stop)
        enabled, undecided = [], set()
        for state, package in selecting_states(returns, shape, role):
            if package is None or prepared.dialect.installed(package) is None:
                enabled.append(provenance(state, role, shape))
            else:
                undecided.add(package)
        if enabled:
            return enabled
        if undecided:
            package = min(undecided)
            pending += [{**installed, package: known} for known in (True, False)]
    return []


def _flag_at(state: State, flag: str, facts: Facts) -> Value | None:
    """The flag's value at a return where it may select its backend, else None. A module
    global the path never wrote holds what the facts say it held on entry (TE 1.11 - 2.1's
    FA3, set at import where its package is installed), and selects only under its gate."""
    value = state.vars.get(flag, facts.names.get(flag) if flag in GATED_FLAGS else None)
    if value is None or value.truth is False:
        return None
    gate = GATED_FLAGS.get(flag)
    if gate is not None and (gate not in state.vars or state.vars[gate].truth is False):
        return None
    return value


def analyze_source(
    source: str,
    hazards: Sequence[Hazard] = HAZARDS,
    function_names: Sequence[str] = SELECTOR_FUNCTIONS,
) -> list[HazardVerdict]:
    """Verdicts for every selector function in `source` and every hazard, in that order
    (`analyze_hazards`: the hazards of one function share their runs, as in flake8)."""
    module = ast.parse(source)
    parsed_from(module, source)
    return [
        verdict
        for function in find_selectors(module, tuple(function_names))
        for verdict in analyze_hazards(module, function, hazards)
    ]


def _distinct_witnesses(hazard: Hazard, dialect: Dialect) -> list[Scenario]:
    """Witnesses that differ in what the analysis binds (environments are not bound, nor the
    kernel release where the selector never compares it: `witness_version`)."""
    seen, distinct = set(), []
    inputs = witness_inputs(hazard)
    versions = dialect.compares_version(hazard.backend)
    for witness in hazard.witnesses(environments=False, versions=versions):
        key = (
            witness.compute_capability,
            witness.backward,
            witness_version(hazard, dialect, witness),
            tuple(sorted(bound_params(inputs, dialect, witness).items())),
        )
        if key not in seen:
            seen.add(key)
            distinct.append(witness)
    return distinct


def _reachable(
    hazard: Hazard,
    dialect: Dialect,
    function: ast.FunctionDef,
    flag: str,
    witness: Scenario,
    value: Value,
    admitting: list[ast.Compare],
) -> HazardVerdict:
    bound = [f"{k}={v!r}" for k, v in witness_params(hazard, dialect, witness).items()]
    if "cudnn_version" in witness_inputs(hazard):  # a call's answer, not a field: said apart
        bound.append(f"cuDNN {'.'.join(map(str, witness.cudnn_version))}")
    inputs = ", ".join(bound)
    backward = any(condition.input == "backward" for condition in hazard.triggers)
    if backward and witness.backward and not dialect.sees_backward:
        inputs += " and a backward to run (autograd on), which this selector cannot tell apart"
        inputs += f" from a forward: it reads no `{BACKWARD_FIELD}`"
    version = witness_version(hazard, dialect, witness)
    if version is not None:
        inputs += f", {hazard.evidence.package} {version}"
    missing = " and ".join(dict.fromkeys(dialect.condition_source(c) for c in hazard.triggers))
    if hazard.evidence.fixed_in is not None:
        missing += f" with {hazard.evidence.package} < {hazard.evidence.fixed_in}"
    archs = "/".join(sm_name(arch) for arch in hazard.architectures)
    if admitting:
        node = admitting[-1]
        why = f"the filter at line {node.lineno} lets {witness.sm} through (`{ast.unparse(node)}`)"
    else:
        sites = [site.stmt for site in value.enablers if site.stmt is not None]
        node = max(sites, key=lambda stmt: stmt.lineno) if sites else function
        why = f"enabled at line {node.lineno} and never switched off"
    detail = (
        f"{hazard.role.display} (`{flag}`) stays selectable on {witness.sm} with {inputs}: {why};"
        f" missing: a filter switching it off when {missing} on {archs}"
    )
    return HazardVerdict(
        hazard.id, function.name, True, True, witness, node.lineno, node.col_offset, detail
    )


def _blocks(
    witnesses: Sequence[Scenario], leaky: set[tuple[int, int]]
) -> list[list[list[Scenario]]]:
    """The witnesses of each architecture, architectures in the order they first appear, in
    blocks that may run together: consecutive architectures where nothing has reached a
    backend yet share one, a leaky one has its own."""
    groups: dict[tuple[int, int], list[Scenario]] = {}
    for witness in witnesses:
        groups.setdefault(witness.compute_capability, []).append(witness)
    blocks: list[list[list[Scenario]]] = []
    joinable = False
    for arch, group in groups.items():
        if arch in leaky or not joinable:
            blocks.append([group])
        else:
            blocks[-1].append(group)
        joinable = arch not in leaky
    return blocks
