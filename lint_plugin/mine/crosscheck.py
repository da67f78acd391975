"""Can TE's selector still pick the backend where the kernel fails? Two judges answer; they agree.

Every mapped case becomes a candidate hazard, and both of this project's judges decide it:
the analyzer (`lint_plugin.engine.analysis.analyze_hazard`: abstract interpretation of the selector's
AST, GUARDED only if the backend is off at every return whatever else holds) and the harness
(`selector_patch.verify.verify_hazard`: TE's own selector run on the virtual device for the
candidate's witnesses). Both reachable: UNGUARDED, with the harness's witness; neither:
guarded; a selector without the backend: not-applicable. When they differ the verdict is
`disagreement`: a bug in one judge, reported as such and never settled by picking a side.

Before either judge, TE's own import-time code has a say the selector cannot see: from TE 2.2,
`backends.py` installs a flash-attn release only where TE supports it (flash-attn 2.7.2.post1
is not installed on SM 10.0+, which need 2.7.3). The harness runs that code; on an architecture
where it leaves the kernel's release uninstalled, TE cannot pick the backend at all, and the
case is guarded there, saying so.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Mapping, Sequence

from lint_plugin.engine.analysis import analyze_hazard
from lint_plugin.engine.dialect import SELECTOR_FUNCTIONS, find_selectors
from lint_plugin.engine.interpreter import Facts
from lint_plugin.mine.candidates import candidate, matches, same_hazard, subsumed
from lint_plugin.mine.devices import Arch
from lint_plugin.mine.findings import Case
from selector_patch.harness import load_selector
from selector_patch.registry import PACKAGE_FIELD, Hazard
from selector_patch.scenario import Scenario
from selector_patch.sources import SelectorSource, SourceError, read_text
from selector_patch.verify import verify_hazard

GUARDED = "guarded"
UNGUARDED = "UNGUARDED"
NOT_APPLICABLE = "not-applicable"
DISAGREEMENT = "disagreement"
#: The analyzer's runs here ask the kernels' validators TE wires in, as the harness runs them.
KERNELS = Facts(kernels=True)


@dataclass(frozen=True)
class Judgement:
    status: str
    #: The harness's first scenario inside the hazard that still selects the backend.
    witness: Scenario | None
    #: Both judges' own words, for a disagreement.
    detail: str


class Judges:
    """One TE selector as both judges see it: parsed for the analyzer, loaded for the harness.

    `text` replaces the file's contents (a patched selector), as in `load_selector`.
    """

    def __init__(
        self,
        source: SelectorSource,
        text: str | None = None,
        function_names: Sequence[str] = SELECTOR_FUNCTIONS,
    ) -> None:
        text = read_text(source.path) if text is None else text
        self.selector = load_selector(source, text=text)  # a syntax error is its LoadError
        self.module = ast.parse(text)
        functions = find_selectors(self.module, tuple(function_names))
        if len(functions) != 1:
            raise SourceError(
                source.path, f"expected one selector function, found {len(functions)}"
            )
        self.function = functions[0]

    def judge(self, hazard: Hazard) -> Judgement:
        witness = next(hazard.witnesses())
        if self.selector.installed(hazard.backend, witness) is False:
            version = getattr(witness, PACKAGE_FIELD[hazard.backend])
            return Judgement(
                GUARDED,
                None,
                f"TE does not install {hazard.role.display} {version} on {witness.sm}: its"
                " kernel wiring refuses that release there",
            )
        static = analyze_hazard(self.module, self.function, hazard, KERNELS)
        report = verify_hazard(self.selector, hazard)
        detail = f"analyzer: {static.detail}; harness: {report.summary()}"
        if not static.applicable and not report.applicable:
            return Judgement(NOT_APPLICABLE, None, detail)
        if static.reachable and report.reachable:
            return Judgement(UNGUARDED, report.witness, detail)
        if not static.reachable and not report.reachable:
            return Judgement(GUARDED, None, detail)
        return Judgement(DISAGREEMENT, report.witness, detail)


@dataclass(frozen=True)
class Verdict:
    case: Case
    status: str
    #: The candidate hazard (None for a case the judges do not take).
    hazard: Hazard | None
    witness: Scenario | None
    #: The id of a registry or configured hazard saying the same.
    matches: str | None
    #: Why the case is unmapped, unreachable or internal, or what the judges said.
    detail: str
    #: Each architecture's own status, where the case covers several.
    by_arch: Mapping[Arch, str] = field(default_factory=dict)

    def on(self, status: str) -> tuple[Arch, ...]:
        """The case's architectures judged `status`."""
        return tuple(arch for arch, found in self.by_arch.items() if found == status)


#: A case's status from its architectures' statuses, the one needing action first.
PRECEDENCE = (DISAGREEMENT, UNGUARDED, GUARDED, NOT_APPLICABLE)


def crosscheck(found: Sequence[Case], judges: Judges, known: Sequence[Hazard]) -> list[Verdict]:
    """A verdict per case, each architecture judged on its own; candidates saying the same
    are judged once.

    Per architecture, because TE filters per architecture: the 99 KB-GPU candidate of seed
    001 is unguarded on sm120 and guarded on sm86, which TE's head-dim allowlist excludes.
    """
    mapped = [case for case in found if case.unmapped is None]
    judged: dict[tuple, Judgement] = {}
    verdicts = []
    for case in found:
        if case.unmapped is not None:
            verdicts.append(Verdict(case, case.standing, None, None, None, case.unmapped))
            continue
        hazard = candidate(case, mapped)
        by_arch: dict[Arch, Judgement] = {}
        for arch in hazard.architectures:
            one = hazard.replace(architectures=(arch,))
            key = same_hazard(one)
            if key not in judged:
                judged[key] = judges.judge(one)
            by_arch[arch] = judged[key]
        status = next(s for s in PRECEDENCE if any(j.status == s for j in by_arch.values()))
        chosen = [j for j in by_arch.values() if j.status == status]
        verdicts.append(
            Verdict(
                case,
                status,
                hazard,
                next((j.witness for j in chosen if j.witness is not None), None),
                matches(hazard, known, subsumed(case, mapped)),
                "; ".join(dict.fromkeys(j.detail for j in chosen)),
                {arch: judgement.status for arch, judgement in by_arch.items()},
            )
        )
    return verdicts
