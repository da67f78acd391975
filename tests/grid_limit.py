"""The limits of both judges: when an analyzer "reachable" the harness does not see is excused.

The analyzer (static) decides for every environment, binding only a hazard's inputs; the harness
(`selector_patch.verify`) for a finite grid: two `NVTE_*` environments, one set of installed
packages, one cuDNN answer, one value of every `AttentionParams` field no hazard names. Where
a static judge says reachable and the harness says not, `grid_limited` says whether that lies
off the grid (and how), for every differential test (`test_fuzz_differential`,
`test_judges_agree`, `test_fuzz_spellings`). It also knows the analyzer's one documented
imprecision: a run about one backend reads the other backends' flags as unknown
(`analysis.Selector.run_slice`), so a filter that decides on another backend's flag is
undecided there. A static "guarded" where the harness selects the backend is never excused.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import itertools
from typing import Any

import torch

from lint_plugin.engine import analysis
from lint_plugin.engine.absint import const
from lint_plugin.engine.analysis import analyze_hazard
from lint_plugin.engine.dialect import find_selectors
from lint_plugin.engine.interpreter import Facts
from lint_plugin.engine.program import function_index
from selector_patch.harness import LoadedSelector, LoadError, Unrepresentable
from selector_patch.harness.params import attention_params_kwargs
from selector_patch.registry import ISOLATING_ENV, PACKAGE_FIELD, Hazard
from selector_patch.roles import ROLES


def _perturbations(hazard: Hazard) -> list[dict]:
    """Single changes of inputs the witness grid holds fixed (none of them a hazard input)."""
    switches = {s for role in ROLES.values() for s in role.switches}
    others = [field for role, field in PACKAGE_FIELD.items() if role != hazard.backend]
    return [
        *({"env": {name: "0"}} for name in sorted(switches)),
        *({"env": env} for role, env in ISOLATING_ENV.items() if role != hazard.backend),
        *({field: None} for field in others),
        {"flash_attn_3": "3.0.0b1"},
        *({"fused_backend": answer} for answer in ("No_Backend", "F16_arbitrary_seqlen")),
        *({"attn_mask_type": mask} for mask in ("no_mask", "padding", "causal_bottom_right")),
        {"qkv_layout": "sbhd_sbhd_sbhd"},
        {"max_seqlen_kv": 256},
        {"cudnn_version": (8, 9, 7)},
    ]


def beyond_grid(
    selector: LoadedSelector, hazard: Hazard, changed: int = 1
) -> dict[str, Any] | None:
    """A witness, changed in `changed` inputs (one or two) the grid never varies, on which TE
    selects the backend. Two, where a case needs both: FA4 forced on after its filters wins over
    FA2 unless flash-attn-4 is absent, and a mask filter switches FlashAttention off unless the
    mask is another one."""
    for witness in hazard.witnesses():
        for changes in _combined(_perturbations(hazard), changed):
            scenario = witness.with_changes(changes)
            if not hazard.triggered_by(scenario):
                continue
            try:
                selected = selector.select(scenario).role == hazard.backend
            except (Unrepresentable, LoadError):  # a change the harness cannot model
                continue
            if selected:
                return scenario.describe()
    return None


def _combined(perturbations: list[dict], changed: int) -> list[dict]:
    """Every `changed` of `perturbations` at once, as one change (their environments merged);
    none that changes one input twice."""
    combined = []
    for chosen in itertools.combinations(perturbations, changed):
        keys = [key for change in chosen for key in change if key != "env"]
        if len(keys) != len(set(keys)):
            continue
        merged: dict = {}
        for change in chosen:
            for key, value in change.items():
                merged[key] = {**merged.get(key, {}), **value} if key == "env" else value
        combined.append(merged)
    return combined


def plain_call(selector: LoadedSelector, function: ast.FunctionDef, hazard: Hazard) -> Facts:
    """What every witness's call holds alike, as analyzer facts.

    The `AttentionParams` values the harness passes (else the dataclass defaults) that are the
    same in every witness, and, so that the analyzer can compare the objects among them
    (`torch.bfloat16`, `torch.Tensor`), every name the selector reads that the loaded module
    resolves to a type or a dtype.
    """
    namespace = selector.module.__dict__
    defaults = {
        field.name: field.default
        for field in dataclasses.fields(namespace["AttentionParams"])
        if field.default is not dataclasses.MISSING
    }
    calls = []
    for witness in hazard.witnesses():
        with contextlib.suppress(Unrepresentable):
            calls.append(
                {**defaults, **attention_params_kwargs(witness, selector.params_fields, namespace)}
            )
    params = {
        name: const(value, frozenset((name,)))
        for name, value in calls[0].items()
        if all(call.get(name) == value for call in calls)
    }
    names = {}
    for dotted in function_index(function).text_names:
        head, _, attribute = dotted.partition(".")
        value = namespace.get(head)
        if attribute:
            value = getattr(value, attribute, None)
        if isinstance(value, (type, torch.dtype)):
            names[dotted] = const(value)
    return Facts(params=params, names=names)


def grid_limited(text: str, selector: LoadedSelector, hazard: Hazard) -> str | None:
    """Why an analyzer "reachable" that the harness does not see is the witness grid's limit.

    Either the harness itself selects the backend for a witness changed in one input the grid
    holds fixed, or the analyzer, given what the grid's calls hold fixed, agrees that it is not
    reachable, or the harness selects it for a witness changed in two such inputs (tried last:
    the pairs cost some hundred selections a witness); None when none holds.
    """
    if beyond_grid(selector, hazard) is not None:
        return "reachable beyond the witness grid"
    module = ast.parse(text)
    function = find_selectors(module)[0]
    if not analyze_hazard(
        module, function, hazard, plain_call(selector, function, hazard)
    ).reachable:
        return "reachable only for inputs the witness grid's calls hold fixed"
    with _every_flag_run():
        if not analyze_hazard(module, function, hazard).reachable:
            return "reachable only where the analyzer reads the other backends' flags as unknown"
    if beyond_grid(selector, hazard, changed=2) is not None:
        return "reachable beyond the witness grid, two inputs changed"
    return None


@contextlib.contextmanager
def _every_flag_run():
    """The analyzer with no backend flag cut from its runs (`Selector.run_slice`): each run
    then computes every flag as the selector does, at the price of the statements the cut
    spares. Prepared selectors are forgotten before and after, so no run of either kind sees
    the other's slices."""
    original = analysis.Selector._cut_slice

    def uncut(self, roles):
        flags = self.dialect.backend_flags
        return (
            self._slice(flags.union(*(self.dialect.sources(flag) for flag in flags))),
            frozenset(),
        )

    analysis.release()
    analysis.Selector._cut_slice = uncut
    try:
        yield
    finally:
        analysis.Selector._cut_slice = original
        analysis.release()
