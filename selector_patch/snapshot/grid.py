"""The requests a snapshot asks: a grid derived from the selector's own comparisons.

Every input the selector compares with a constant (`comparisons`) gets a value in each cell its
constants cut (`values`). Architectures, modes (training / eval with a backward / forward-only)
and the backend switches (`NVTE_*` variables that turn a backend off, `ROLES`) are crossed in
full: they are what every region of a difference is stated in. The other inputs are covered
pairwise (`covering`), and each pairwise row is crossed with every architecture, mode and switch
setting, so any filter on one or two inputs shows on every architecture in every mode.

The inputs are `select()` keywords (`selector_patch.testing.inputs`), so the grid grows with the
vocabulary: a `Scenario` field is varied under its own name wherever the selector reads the
`AttentionParams` field of that name (or its TE alias, `is_training`), and any other field of
the release's `AttentionParams` is varied as a field, with the constants it is compared with.
A value the selector cannot take on its own (`fp8=True` without an FP8 recipe raises in TE's own
code) is dropped, and the derivation says so. `Derivation` is what was read; `union` merges two
selectors' readings, so that each one's constants are in the grid both are run on.
"""

from __future__ import annotations

import ast
import bisect
import dataclasses
import itertools
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, Iterator, Mapping, NamedTuple, Sequence

from packaging.version import Version

from selector_patch.registry import HAZARDS, PACKAGE_FIELD, Hazard
from selector_patch.roles import ROLES
from selector_patch.scenario import KV_CACHES, Scenario
from selector_patch.snapshot import comparisons as reading
from selector_patch.snapshot import cxx_comparisons as cxx_reading
from selector_patch.snapshot.comparisons import Comparison, Expression
from selector_patch.snapshot.covering import pair_rows, singles_of
from selector_patch.snapshot.values import (
    Values,
    categorical_values,
    holds,
    ordered,
    ordered_values,
)
from selector_patch.testing.inputs import ALIASES, ENV_PREFIX, JOINT, SCENARIO_FIELDS
from selector_patch.versions import valid as valid_version

if TYPE_CHECKING:
    from selector_patch.harness import LoadedSelector

STRENGTH = 2
#: The most requests a grid may hold. TE 2.20.2's holds 231,198, asked in about 30 s; a
#: selector whose constants cut its inputs much finer (a fork with a hundred head dims, each
#: meeting another input in one condition) would square that in its rows of pairs, and its
#: snapshot would take hours and gigabytes. Such a grid is refused, saying which pair of
#: inputs holds most of it, rather than asked for as long as it takes or thinned unsaid.
REQUEST_BUDGET = 1_000_000
#: The most rows one C++ condition adds (`_rows_of`).
JOINT_ROWS = 8
#: `AttentionParams` fields the harness builds from a `Scenario` input, varied as that input
#: over its values: a KV cache's `InferenceParams` is no constant the selector compares with
#: (`inference_params is not None`), so its own comparisons give no value but None; the grid
#: asks each kind of cache (`scenario.KV_CACHES`) where the selector reads the field,
#: with every input of TE's KV-cache section beside it (`comparisons.read`'s `blocks`).
BUILT = {"inference_params": "kv_cache"}
#: How a caller asks for each mode: `DotProductAttention.training`, and whether autograd records
#: the call (a backward will run).
MODES: dict[str, dict[str, bool]] = {
    "training": {"training": True, "backward": True},
    "eval": {"training": False, "backward": True},
    "forward": {"training": False, "backward": False},
}
#: How reports name the modes (the grid's keys are short: a snapshot line names one).
MODE_NAMES = {"training": "training", "eval": "eval with backward", "forward": "forward-only"}
#: Compute capabilities of NVIDIA's data-center and consumer GPUs since Volta: an architecture
#: cell of the selector's (the GPUs between two of its constants) is asked on the first of these
#: in it, or on one a hazard names.
KNOWN_ARCHITECTURES = (
    (7, 0), (7, 5), (8, 0), (8, 6), (8, 7), (8, 9), (9, 0),
    (10, 0), (10, 3), (11, 0), (12, 0), (12, 1),
)  # fmt: skip
ARCHITECTURE = "compute_capability"
#: Keywords the crossed part of the grid sets.
CROSSED = (ARCHITECTURE, "training", "backward")
#: The version a grid installs for a role whose `Scenario` default is "not installed":
#: flashattn-hopper 3.0.0b1 is flash-attn 3's one published release. The grid's plain call has
#: every backend installed (the default environment of a user who installed them all), so that
#: FA3's own filters meet every other input on sm90, as the other roles' do everywhere.
INSTALLED = {"FA3": "3.0.0b1"}


class Switch(NamedTuple):
    """An `NVTE_*` variable that turns a backend off, and the value that does."""

    name: str
    off: str


class Factor(NamedTuple):
    """An input covered pairwise: its values besides the default, and where they come from."""

    keyword: str
    #: The default's description (the value itself where JSON has it).
    default: Any
    levels: tuple[Any, ...]
    #: The comparisons the values come from, described with their line.
    compared: tuple[str, ...]
    one_sided: tuple[str, ...] = ()
    #: Values left out, each with the reason: ((value, reason), ...).
    dropped: tuple[tuple[Any, str], ...] = ()
    #: For an ordered input, where the selector's constants cut it (`values.Values.cuts`).
    cuts: tuple[tuple[Any, int], ...] = ()
    #: Whether the grid's default differs from `select()`'s, so that a request states it.
    stated: bool = False

    def value(self, level: int) -> Any:
        """Level 0 is the default, which the request leaves out."""
        return self.levels[level - 1]


class Configuration(NamedTuple):
    """One request of the grid: where it sits in the crossed part, and its pairwise row."""

    architecture: tuple[int, int]
    mode: str
    #: Per switch of the grid, whether its backend is left on (the variable unset).
    switches: tuple[bool, ...]
    row: int


@dataclass(frozen=True)
class Derivation:
    """What one or more selectors compare each `select()` keyword with."""

    comparisons: Mapping[str, tuple[Comparison, ...]]
    defaults: Mapping[str, Any]
    truth_tested: frozenset[str]
    switches: tuple[Switch, ...]
    hazards: tuple[Hazard, ...] = HAZARDS
    #: Keywords that meet in one condition: ((a, b), line of the first), a < b.
    together: tuple[tuple[tuple[str, str], int], ...] = ()
    #: Per package field, the version the grid's plain call installs (`installed_versions`).
    installed: Mapping[str, str] = dataclasses.field(default_factory=dict)
    #: Conjunctions of comparisons that only hold together (`cxx_comparisons.conditions`).
    conditions: tuple[tuple[Comparison, ...], ...] = ()

    def union(self, other: "Derivation") -> "Derivation":
        keys = dict.fromkeys((*self.comparisons, *other.comparisons))
        comparisons = {
            key: tuple(
                dict.fromkeys((*self.comparisons.get(key, ()), *other.comparisons.get(key, ())))
            )
            for key in keys
        }
        return Derivation(
            comparisons,
            {**other.defaults, **self.defaults},
            self.truth_tested | other.truth_tested,
            tuple(sorted(set(self.switches) | set(other.switches))),
            tuple({hazard.id: hazard for hazard in (*other.hazards, *self.hazards)}.values()),
            tuple(sorted({**dict(other.together), **dict(self.together)}.items())),
            {**other.installed, **self.installed},
            tuple(dict.fromkeys((*self.conditions, *other.conditions))),
        )


def keyword_of(name: str, params_fields: Sequence[str]) -> str | None:
    """The `select()` keyword of a selector input, or None when it is none of them."""
    if name.startswith(ENV_PREFIX) or name in ("compute_capability", "cudnn_version"):
        return name
    if name in PACKAGE_FIELD.values():
        return name
    if name not in params_fields:
        return None  # a field that computes itself (a backward signal), or not a field at all
    return _keyword(name)


def _keyword(field: str) -> str:
    """The `select()` keyword an `AttentionParams` field is varied as."""
    return ALIASES.get(field) or BUILT.get(field, field)


def _named_inputs(text: str) -> dict[str, str]:
    """Expressions holding a flash-attn role's installed state or version, by their input."""
    named = {}
    for role, field in PACKAGE_FIELD.items():
        for expression in (*ROLES[role].installed, *ROLES[role].versions):
            if expression in text:
                named[expression] = field
    return named


def derive(
    loaded: "LoadedSelector", hazards: Sequence[Hazard] = HAZARDS, cxx: bool = False
) -> Derivation:
    """Read the loaded selector's comparisons, as `select()` keywords, with their defaults;
    with `cxx`, also those of the C++ fused query that answers for it (`cxx_comparisons`)."""
    from selector_patch.harness.calling import PARAMS

    tree = ast.parse(loaded.text)
    namespace = loaded.module.__dict__
    found = reading.read(
        tree, params_dialect=PARAMS in namespace, named=_named_inputs(loaded.text), blocks=BUILT
    )
    fields = loaded.params_fields
    defaults = _defaults(loaded)
    switch_names = {name for role in ROLES.values() for name in role.switches}
    switches = tuple(
        Switch(name, "0" if (default or "1") != "0" else "1")
        for name, default in sorted(found.env.items())
        if name in switch_names
    )
    by_keyword: dict[str, list[Comparison]] = {}
    query = loaded.fused_query_text if cxx else None
    conditions = []
    if query is not None:
        conditions = [
            atoms
            for atoms in cxx_reading.conditions(query)
            if all(keyword_of(atom.input, fields) == atom.input for atom in atoms)
        ]
        flags = [a for atoms in conditions for a in atoms if a.input in cxx_reading.FLAGS]
        found = found._replace(
            comparisons=[*found.comparisons, *cxx_reading.comparisons(query), *flags]
        )
    for comparison in found.comparisons:
        keyword = keyword_of(comparison.input, fields)
        if keyword is not None:
            by_keyword.setdefault(keyword, []).append(comparison._replace(input=keyword))
    tested = {keyword_of(name, fields) for name in found.truth_tested} - {None}
    for keyword in tested:
        by_keyword.setdefault(keyword, [])
    for name, default in found.env.items():
        defaults.setdefault(name, default)
        by_keyword.setdefault(name, [])
    for field in PACKAGE_FIELD.values():
        if field in by_keyword or field in tested:
            by_keyword.setdefault(field, [])
    for keyword, compared in by_keyword.items():
        defaults[keyword] = _named_default(defaults.get(keyword), compared, namespace)
    together: dict[tuple[str, str], int] = {}
    for (first, second), line in found.together:
        keywords = (keyword_of(first, fields), keyword_of(second, fields))
        if None not in keywords and keywords[0] != keywords[1]:
            together.setdefault(tuple(sorted(keywords)), line)
    _add_joint(by_keyword, defaults, together)
    packages = [field for field in PACKAGE_FIELD.values() if field in by_keyword]
    return Derivation(
        {keyword: tuple(found) for keyword, found in sorted(by_keyword.items())},
        {keyword: defaults.get(keyword) for keyword in by_keyword},
        frozenset(tested),
        switches,
        tuple(hazards),
        tuple(sorted(together.items())),
        installed_versions(loaded, packages, by_keyword, hazards),
        tuple(conditions),
    )


def installed_versions(
    loaded: "LoadedSelector",
    fields: Sequence[str],
    compared: Mapping[str, Sequence[Comparison]],
    hazards: Sequence[Hazard],
) -> dict[str, str]:
    """Per package field, the first version the release takes as installed: `select()`'s
    default, else `INSTALLED`, else a version a hazard or the selector names. The grid's plain
    call has every backend installed, in a version the release accepts (TE 2.1 takes flash-attn
    up to 2.7.4.post1 only: there the default 2.8.3 would leave FA2 out of every request)."""
    found = {}
    for field in fields:
        role = next(role for role, name in PACKAGE_FIELD.items() if name == field)
        default = getattr(Scenario(), field)
        named = _named_versions(role, compared[field], hazards)
        candidates = [default, INSTALLED.get(role), *named]
        for version in dict.fromkeys(v for v in candidates if v is not None):
            if _takes(loaded, field, version):
                found[field] = version
                break
    return found


def _takes(loaded: "LoadedSelector", field: str, version: str) -> bool:
    """Whether the release, on the plain call's machine, counts `version` as installed: TE's
    own import-time code decides (a release whose import fails beside it does not: TE 2.1
    cannot import an FA3 built from flash-attention 2.8.3's `hopper/`)."""
    from selector_patch.harness import LoadError

    role = next(role for role, name in PACKAGE_FIELD.items() if name == field)
    try:
        return loaded.installed(role, Scenario().with_changes({field: version})) is not False
    except LoadError:
        return False


def _add_joint(
    by_keyword: dict[str, list[Comparison]],
    defaults: dict[str, Any],
    together: dict[tuple[str, str], int],
) -> None:
    """A keyword that sets several inputs at once (`head_dim`: both head dims) is an input of its
    own where the selector compares all of them: with each input alone, a head dim of 256 is
    also an MLA request (qk != v), which TE filters apart, so "head dim 256 with dropout"
    would be nowhere in the grid. It takes all their comparisons, and meets in their stead what
    any of them meets: the parts keep only their pairs with each other (MLA itself), which
    halves the rows of pairs."""
    for keyword, parts in JOINT.items():
        if keyword in by_keyword or not all(part in by_keyword for part in parts):
            continue
        by_keyword[keyword] = [c._replace(input=keyword) for p in parts for c in by_keyword[p]]
        defaults[keyword] = defaults[parts[0]]
        for (first, second), line in list(together.items()):
            for part, other in ((first, second), (second, first)):
                if part in parts and other not in parts:
                    together.setdefault(tuple(sorted((keyword, other))), line)
                    together.pop((first, second), None)


def _named_default(default: Any, compared: Sequence[Comparison], namespace: dict) -> Any:
    """A default that is an object (`torch.bfloat16`), as the constant the selector names it by,
    so that the grid can tell it from the other values and write it down."""
    if default is None or isinstance(default, (bool, int, float, str, tuple)):
        return default
    for comparison in compared:
        values = comparison.value if isinstance(comparison.value, tuple) else (comparison.value,)
        for value in values:
            if isinstance(value, Expression):
                try:
                    found = value.resolve(namespace)
                except LookupError:
                    continue
                if found is default:
                    return value
    return default


def _defaults(loaded: "LoadedSelector") -> dict[str, Any]:
    """Each keyword's value in the plain call, as `DotProductAttention` builds it: the field's
    value as passed where the harness passes one (`torch.bfloat16`, in the same terms as the
    values the selector compares it with), else the scenario's, else the declared default."""
    from selector_patch.harness.params import attention_params_kwargs

    namespace = loaded.module.__dict__
    default = Scenario()
    built = attention_params_kwargs(default, loaded.params_fields, namespace)
    declared = _declared_defaults(namespace)
    values: dict[str, Any] = {}
    for field in loaded.params_fields:
        keyword = _keyword(field)
        if field in built:
            values[keyword] = built[field]
        elif keyword in SCENARIO_FIELDS:
            values[keyword] = getattr(default, keyword)
        else:
            values[keyword] = declared.get(field)
    for keyword in ("compute_capability", "cudnn_version", *PACKAGE_FIELD.values()):
        values[keyword] = getattr(default, keyword)
    return values


def _declared_defaults(namespace: Mapping[str, Any]) -> dict[str, Any]:
    """The `AttentionParams` dataclass defaults (or, before it, the selector's parameters')."""
    import inspect

    from selector_patch.harness.calling import PARAMS
    from selector_patch.harness.loader import SELECTOR

    params_class = namespace.get(PARAMS)
    if params_class is not None:
        return {
            field.name: field.default
            for field in dataclasses.fields(params_class)
            if field.default is not dataclasses.MISSING
        }
    signature = inspect.signature(inspect.unwrap(namespace[SELECTOR]))
    return {
        name: parameter.default
        for name, parameter in signature.parameters.items()
        if parameter.default is not inspect.Parameter.empty
    }


@dataclass(frozen=True)
class Grid:
    """The requests of a snapshot, and how they were derived.

    Per architecture and mode, every switch setting is asked the plain call and each value of
    the `Scenario` vocabulary alone (the first `singles` rows); the settings in `pair_settings`
    (every backend on, and each backend alone beside the reference one) are also asked each value
    of the other `AttentionParams` fields alone, and the rows of pairs.
    """

    architectures: tuple[tuple[int, int], ...]
    #: The comparisons the architectures come from, described.
    architecture_comparisons: tuple[str, ...]
    modes: tuple[str, ...]
    switches: tuple[Switch, ...]
    factors: tuple[Factor, ...]
    #: One level per factor (0: its default), `covering.rows`: the plain call, each value alone,
    #: then the value pairs of `pairs`.
    rows: tuple[tuple[int, ...], ...]
    #: How many of `rows` are the plain call and the single values.
    singles: int
    pair_settings: tuple[tuple[bool, ...], ...]
    #: Factors that meet in one of the selector's conditions, with where: ((a, b), line).
    pairs: tuple[tuple[tuple[str, str], int], ...] = ()
    strength: int = STRENGTH

    def settings(self) -> list[tuple[bool, ...]]:
        """Every switch setting, each switch on (unset) before off."""
        return list(itertools.product((True, False), repeat=len(self.switches)))

    def rows_of(self, setting: tuple[bool, ...]) -> range:
        """The rows asked under a switch setting."""
        return range(len(self.rows) if setting in self.pair_settings else self.singles)

    @cached_property
    def _offsets(self) -> tuple[list[int], int]:
        """Where each setting's rows start within one architecture and mode, and the length."""
        offsets, total = [], 0
        for setting in self.settings():
            offsets.append(total)
            total += len(self.rows_of(setting))
        return offsets, total

    @property
    def per_mode(self) -> int:
        """Requests per architecture and mode."""
        return self._offsets[1]

    def __len__(self) -> int:
        return len(self.architectures) * len(self.modes) * self.per_mode

    def configurations(self) -> Iterator[Configuration]:
        """Every request, in the snapshot's order."""
        settings = self.settings()
        for architecture in self.architectures:
            for mode in self.modes:
                for switches in settings:
                    for row in self.rows_of(switches):
                        yield Configuration(architecture, mode, switches, row)

    def at(self, position: int) -> Configuration:
        """The configuration at `position` in `configurations()`'s order."""
        offsets, per_mode = self._offsets
        block, within = divmod(position, per_mode)
        architecture, mode = divmod(block, len(self.modes))
        setting = bisect.bisect_right(offsets, within) - 1
        return Configuration(
            self.architectures[architecture],
            self.modes[mode],
            self.settings()[setting],
            within - offsets[setting],
        )

    def position(self, configuration: Configuration) -> int:
        """Where `configuration` is in `configurations()`'s order: `at`'s inverse."""
        offsets, per_mode = self._offsets
        block = self.architectures.index(configuration.architecture) * len(self.modes)
        block += self.modes.index(configuration.mode)
        setting = self.settings().index(configuration.switches)
        return block * per_mode + offsets[setting] + configuration.row

    def keywords(self, configuration: Configuration) -> dict[str, Any]:
        """The request as `select()` keywords: the crossed part, then the row's non-defaults."""
        keywords: dict[str, Any] = {ARCHITECTURE: configuration.architecture}
        keywords.update(MODES[configuration.mode])
        for switch, on in zip(self.switches, configuration.switches):
            if not on:
                keywords[switch.name] = switch.off
        keywords.update(self.row_keywords(configuration.row))
        return keywords

    def row_keywords(self, row: int) -> dict[str, Any]:
        """The row's inputs that a request states: those off the default, and defaults of the
        grid's own (`Factor.stated`)."""
        keywords = {}
        for factor, level in zip(self.factors, self.rows[row]):
            if level:
                keywords[factor.keyword] = factor.value(level)
            elif factor.stated:
                keywords[factor.keyword] = factor.default
        return keywords


def isolating_settings(switches: Sequence[Switch]) -> tuple[tuple[bool, ...], ...]:
    """Every backend on, and each backend alone beside the reference one (`ROLES`): each other
    role off by its most specific switch that is not the role's own (TE 2.15 - 2.17 have one
    flash switch for FA2, FA3 and FA4: "flash alone" there)."""
    names = [switch.name for switch in switches]

    def switch_of(role) -> str | None:
        return next((name for name in role.switches if name in names), None)

    settings = [tuple(True for _ in names)]
    for role in ROLES.values():
        own = switch_of(role)
        if own is None:
            continue
        off = {
            switch_of(other)
            for other in ROLES.values()
            if other is not role and not other.reference and switch_of(other) not in (None, own)
        }
        setting = tuple(name not in off for name in names)
        if setting not in settings:
            settings.append(setting)
    return tuple(settings)


def _architectures(
    comparisons: Sequence[Comparison], hazards: Sequence[Hazard]
) -> tuple[tuple[int, int], ...]:
    """Every architecture a hazard names, and a known GPU of each other cell the selector's
    architecture constants cut (GPUs that every comparison answers alike)."""
    chosen = {arch for hazard in hazards for arch in hazard.architectures}
    chosen |= {
        tuple(control.changes[ARCHITECTURE])
        for hazard in hazards
        for control in hazard.controls
        if ARCHITECTURE in control.changes
    }
    cells: dict[tuple, list[tuple[int, int]]] = {}
    for arch in KNOWN_ARCHITECTURES:
        cells.setdefault(tuple(holds(c, arch) for c in comparisons), []).append(arch)
    for members in cells.values():
        if not chosen.intersection(members):
            chosen.add(members[0])
    return tuple(sorted(chosen))


def _named_versions(role: str, comparisons: Sequence[Comparison], hazards) -> list[str]:
    """The versions of a role's package the selector compares with or a hazard names, sorted."""
    versions = {str(c.value) for c in comparisons if isinstance(c.value, str)}
    for hazard in hazards:
        if hazard.backend == role:
            versions.update((hazard.kernel_version, *hazard.older_kernel_versions))
    return sorted((v for v in versions if valid_version(v)), key=Version)


def _package_levels(field: str, base: Any, comparisons: Sequence[Comparison], hazards) -> Values:
    """Not installed, and every version the selector or a hazard names for the role."""
    role = next(role for role, name in PACKAGE_FIELD.items() if name == field)
    versions = _named_versions(role, comparisons, hazards)
    return Values((None, *(v for v in versions if v != base)))


def _described(comparisons: Sequence[Comparison]) -> tuple[str, ...]:
    return tuple(
        dict.fromkeys(f"{c.describe()} (line {c.line})" for c in sorted(comparisons, key=_order))
    )


def _order(comparison: Comparison) -> tuple:
    return (comparison.line, comparison.describe())


def _values(derivation: Derivation, keyword: str) -> Values:
    comparisons = derivation.comparisons[keyword]
    default = derivation.defaults.get(keyword)
    if keyword in PACKAGE_FIELD.values():
        return _package_levels(
            keyword, derivation.installed.get(keyword, default), comparisons, derivation.hazards
        )
    if keyword == BUILT["inference_params"]:
        return Values(KV_CACHES)
    if keyword.startswith(ENV_PREFIX):
        constants = [c.value for c in comparisons if isinstance(c.value, str)]
        if keyword in derivation.truth_tested:
            constants += ["0", "1"]
        return Values(tuple(dict.fromkeys(c for c in constants if c != (default or ""))))
    if ordered(default) and (not isinstance(default, tuple) or _ordered_tuple(comparisons)):
        return ordered_values(default, comparisons)
    return categorical_values(default, comparisons, keyword in derivation.truth_tested)


def _ordered_tuple(comparisons: Sequence[Comparison]) -> bool:
    """A tuple the selector orders as a whole (`cudnn_version < (9, 18, 1)`), not one it only
    tells apart or reads element by element (`window_size != (-1, -1)`, `window_size[0]`)."""
    return any(c.op in ("<", "<=", ">", ">=") and c.index is None for c in comparisons)


def _json_default(value: Any) -> Any:
    """The default as the grid records it: itself where it is a literal or a named constant,
    else its `repr` (an object the request never spells out: it is left to the harness)."""
    if value is None or isinstance(value, (bool, int, float, str, Expression)):
        return value
    if isinstance(value, tuple) and all(isinstance(v, (int, float, str)) for v in value):
        return value
    return repr(value)


def factors_of(derivation: Derivation) -> list[Factor]:
    """Every covered input with its values, before any is tried."""
    crossed = {*CROSSED, *(switch.name for switch in derivation.switches)}
    factors = []
    for keyword, comparisons in derivation.comparisons.items():
        if keyword in crossed:
            continue
        values = _values(derivation, keyword)
        default = derivation.defaults.get(keyword)
        base = derivation.installed.get(keyword, default)
        factors.append(
            Factor(
                keyword,
                _json_default(base),
                values.levels,
                _described(comparisons),
                values.one_sided,
                cuts=values.cuts,
                stated=base != default,
            )
        )
    return factors


def in_vocabulary(keyword: str) -> bool:
    """A `select()` word the project builds as a caller would (a `Scenario` field, `head_dim`,
    an `NVTE_*` variable), not an `AttentionParams` field passed as given: its single values are
    asked under every switch setting. A field passed as given (`qkv_type=Float8Tensor` with no
    FP8 recipe) is asked under the backend-isolating settings only, as the pairs are: crossing
    requests no caller makes with all 64 settings would double the grid. A field that joins
    the `Scenario` vocabulary is crossed in full from then on."""
    return keyword in SCENARIO_FIELDS or keyword in JOINT or keyword.startswith(ENV_PREFIX)


def build(derivation: Derivation, factors: Sequence[Factor]) -> Grid:
    """The grid of `derivation` over `factors` (as `factors_of` gives them, less what failed).

    A factor left without a value besides its default stays in the grid, for the record of what
    was compared and dropped; its entry in every row is the default."""
    kept = tuple(factors)
    positions = {factor.keyword: index for index, factor in enumerate(kept) if factor.levels}
    pairs = tuple(
        (pair, line) for pair, line in derivation.together if all(k in positions for k in pair)
    )
    sizes = [len(factor.levels) + 1 for factor in kept]
    spoken = [index for index, factor in enumerate(kept) if in_vocabulary(factor.keyword)]
    singles = singles_of(sizes, spoken)
    rest = [row for row in singles_of(sizes) if row not in singles]
    doubles = pair_rows(sizes, [(positions[a], positions[b]) for (a, b), _ in pairs])
    rows_of = _rows_of(kept)
    joint = [row for condition in derivation.conditions for row in rows_of(condition)]
    architecture = derivation.comparisons.get(ARCHITECTURE, ())
    return Grid(
        _architectures(architecture, derivation.hazards),
        _described(architecture),
        tuple(MODES),
        derivation.switches,
        kept,
        tuple(dict.fromkeys(singles + rest + doubles + joint)),
        len(singles),
        isolating_settings(derivation.switches),
        pairs,
    )


def refusal(grid: Grid, budget: int | None = None) -> str | None:
    """Why `grid` is refused, or None when it holds at most `budget` (`REQUEST_BUDGET`)
    requests: its size, the budget, and the pair of inputs with the most rows."""
    budget = REQUEST_BUDGET if budget is None else budget
    if len(grid) <= budget:
        return None
    levels = {factor.keyword: len(factor.levels) for factor in grid.factors}

    def rows(pair: tuple[tuple[str, str], int]) -> int:
        (first, second), _line = pair
        return levels[first] * levels[second]

    cause = f"its grid holds {len(grid):,} requests, over the budget of {budget:,}"
    if not grid.pairs:
        return cause
    largest = max(grid.pairs, key=rows)
    (first, second), line = largest
    return f"{cause}; the largest share: {first} x {second} (line {line}, {rows(largest):,} rows)"


def _rows_of(factors: Sequence[Factor]):
    """A condition's rows: each ordered input it compares at the value nearest its default (the
    default itself first; `head_dim_v` beside `head_dim_qk` at the next two too, for MLA) that
    every comparison of the condition on it holds for, each other input at every value that
    does (a mask "not causal" is any of the others, and which one the rest of the query admits
    is its to say), at most `JOINT_ROWS` rows; none when a value is missing (an input the grid
    does not vary, or none of its values fits) or a row would set fewer than two inputs (the
    single values are rows already; a row of two that a pair holds too is asked once)."""
    index = {factor.keyword: position for position, factor in enumerate(factors)}

    def rows(condition: Sequence[Comparison]) -> list[tuple[int, ...]]:
        choices: list[tuple[int, list[int]]] = []
        inputs = dict.fromkeys(atom.input for atom in condition)
        for keyword in inputs:
            if keyword not in index:
                if keyword == ARCHITECTURE:
                    continue  # crossed: every row is asked on every architecture
                return []
            factor = factors[index[keyword]]
            atoms = [atom for atom in condition if atom.input == keyword]
            values = [factor.default, *factor.levels]
            fits = [i for i, v in enumerate(values) if all(holds(a, v) for a in atoms)]
            if not fits:
                return []
            if factor.cuts or 0 in fits:
                # the second head dim also at its next two values: TE's MLA refusals also test
                # `head_dim_qk != head_dim_v`, which no constant states, and the value just
                # past a constant (129) is one that TE refuses for its alignment alone
                kept = 3 if keyword == "head_dim_v" and "head_dim_qk" in inputs else 1
                fits = sorted(fits, key=_nearness(factor, values))[:kept]
            choices.append((index[keyword], fits))
        found = []
        for chosen in itertools.islice(itertools.product(*(f for _, f in choices)), JOINT_ROWS):
            levels = [0] * len(factors)
            for (position, _fits), level in zip(choices, chosen):
                levels[position] = level
            if sum(1 for level in levels if level) >= 2:
                found.append(tuple(levels))
        return found

    return rows


def _nearness(factor: Factor, values: Sequence[Any]):
    """How far a value (by index into `values`, the default first) is from the default: by
    rank for an ordered input, else by index."""
    if not factor.cuts:
        return lambda i: i
    try:
        ranked = sorted(range(len(values)), key=lambda i: values[i])
    except TypeError:
        return lambda i: i
    rank = {i: r for r, i in enumerate(ranked)}
    return lambda i: (abs(rank[i] - rank[0]), i)
