"""The `TEA` codes: what each reports, why, how to fix it, and example selectors.

Each rule carries ruff-style documentation and fixit-style VALID / INVALID example selectors
(`lint_plugin.rule_examples`, loaded when first asked: flake8 only reports); `tests/test_rules.py`
runs the plugin on every example (an INVALID one must be reported with the rule's code, a VALID
one must not). Hazard rules (TEA0xx) are generated from the hazard registry, so a hazard added
there gets a lint code with its evidence in the docs; their examples live with the rules because
they are about how selectors are written, not about kernels.
"""

from __future__ import annotations


from selector_patch.records import TupleRecord
from selector_patch.registry import HAZARDS, Hazard, TeFix

FIX_COMMAND = "python -m codemods.apply"


class Rule(TupleRecord):
    code: str
    name: str
    #: One line: the start of every message with this code.
    summary: str
    what: str
    why: str
    fix: str

    def message(self, detail: str) -> str:
        return f"{self.code} {self.summary}: {detail}"

    @property
    def valid(self) -> tuple[str, ...]:
        """Example selectors the rule must not flag."""
        return _examples(self.code)[0]

    @property
    def invalid(self) -> tuple[str, ...]:
        """Example selectors the rule must flag."""
        return _examples(self.code)[1]


def _examples(code: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    from lint_plugin.rule_examples import EXAMPLES

    return EXAMPLES.get(code, ((), ()))


def hazard_rule(hazard: Hazard) -> Rule:
    """The rule of a registry hazard, or of one a user declares in `[tool.te-attn-guards]`."""
    evidence = hazard.evidence
    archs = ", ".join(f"sm{10 * major + minor}" for major, minor in hazard.architectures)
    triggers = " and ".join(str(condition) for condition in hazard.triggers)
    if isinstance(evidence, TeFix):
        return _te_fix_rule(hazard, evidence, archs, triggers)
    return Rule(
        code=hazard.id,
        name=hazard.title,
        summary=hazard.title,
        what=(
            f"Interprets the selector once per witness of hazard {hazard.id} ({triggers} on"
            f" {archs}) and reports when {hazard.role.display} can still be selected."
        ),
        why=(
            f"{evidence.package} {evidence.affected}: {evidence.file}: {evidence.text}"
            f" ({evidence.reference})."
        ),
        fix=(
            f"Run `{FIX_COMMAND} PATH`: it inserts, in the '{hazard.section}' section, a filter"
            f' that logs "{hazard.message}" and switches the backend off.'
        ),
    )


def _te_fix_rule(hazard: Hazard, fix: TeFix, archs: str, triggers: str) -> Rule:
    """A TE fix's rule: TE's own words and commit are the evidence; flake8 reports it where
    `te-fixes = true`, `codemods.apply --te-fixes` inserts the guard."""
    return Rule(
        code=hazard.id,
        name=hazard.title,
        summary=hazard.title,
        what=(
            f"Interprets the selector once per witness of {hazard.id} ({triggers} on {archs}) and"
            f" reports when {hazard.role.display} can still be selected; a tree whose recorded"
            " release already has TE's C++ fix is not reported. Runs where `te-fixes = true` is"
            " set in `[tool.te-attn-guards]`."
        ),
        why=(
            f'{fix.cites()}: "{fix.failure}" ({fix.file}). Every earlier release, and every fork'
            f" of one, still selects it; TE {fix.te_last_lacking} does, with its own C++."
        ),
        fix=(
            f"Run `{FIX_COMMAND} --te-fixes PATH`: it inserts, in the '{hazard.section}'"
            f' section, a filter that logs "{hazard.message}" and switches the backend off.'
            " Where the code cannot be changed, `selector_patch.install()` applies it at run time."
        ),
    )


def _coverage_rule(code: str, topic: str, input_name: str) -> Rule:
    return Rule(
        code=code,
        name=f"missing-{topic.replace(' ', '-')}-filter",
        summary=f"backend without a {topic} filter",
        what=(
            f"Reports a non-reference backend flag that no filter depending on `{input_name}`"
            " can switch off in a plain call (optional features at their defaults)."
        ),
        why=(
            f"Every kernel library has {topic} limits; a backend with no {topic} filter"
            " at all is how TE shipped FA4 for deterministic backward on SM 12.x."
        ),
        fix=f"Add a filter reading `{input_name}` that switches the flag off where the kernel"
        " cannot run, or delegate to a backend query that is passed that input.",
    )


RULES: dict[str, Rule] = {
    rule.code: rule
    for rule in (
        *(hazard_rule(hazard) for hazard in HAZARDS),
        _coverage_rule("TEA101", "determinism", "deterministic"),
        _coverage_rule("TEA102", "dropout", "attention_dropout"),
        _coverage_rule("TEA103", "compute capability", "device_compute_capability"),
        Rule(
            code="TEA900",
            name="internal-error",
            summary="te-attn-guards could not analyse this selector",
            what="Reports, once per file, that the analysis failed, and why.",
            why="A linter must never crash the run it is part of; a failure is a finding.",
            fix="Report the message to te-attn-guards; `# noqa: TEA900` silences it meanwhile.",
        ),
        Rule(
            code="TEA902",
            name="bad-configuration",
            summary="invalid [tool.te-attn-guards] configuration",
            what="Reports, once per file, a `pyproject.toml` table the tools cannot use, naming"
            " the file and the key.",
            why="The linter, the codemod and the runtime patch read the same table; a typo there"
            " must not silently drop a hazard.",
            fix="Correct the key the message names (`Hazard.to_mapping()` shows the schema).",
        ),
        Rule(
            code="TEA901",
            name="analysis-budget",
            summary="selector too large to analyse within the interpreter's budget",
            what="Reports a selector whose interpretation exceeds the statement budget.",
            why="The analysis runs on every commit; it gives up rather than stall flake8.",
            fix="Split the selector, or raise the budget in `lint_plugin.engine.interpreter`.",
        ),
    )
}
