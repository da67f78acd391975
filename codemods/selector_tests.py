"""The pytest module `--emit-tests DIR` writes for the guards the codemod just inserted.

For each inserted hazard it keeps, from the registry's witnesses, those the *unpatched* selector
answers with the hazard's backend (the requests the guard changes), and from their controls,
those where both the unpatched and the patched selector keep the backend. Both selectors are the
target's own, run on the virtual device. So the module fails on exactly its witness cases
before the guard and passes after it; it says so in TE's test style (cases in a dict keyed by
id, one parametrized test per hazard and kind) and uses only the pytest plugin's public surface
(`load_te_selector`, `select`, `assert_selected` / `assert_not_selected`).

The text is deterministic (no dates, no absolute paths: the selector is found relative to the
test file) and laid out as black lays it out at any line length from 88 up: every collection is
exploded with a trailing comma, and no line is longer than 88 characters. A file that already
holds this text is left alone; one that holds anything else is replaced only with `force`.
"""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, Sequence

from codemods.files import FileError, replace_atomically
from codemods.plan import Plan
from lint_plugin.engine.dialect import literal
from selector_patch.registry import Hazard
from selector_patch.scenario import Scenario
from selector_patch.sources import SelectorSource
from selector_patch.testing.cases import CONTROL, WITNESS, HazardCase, cases

if TYPE_CHECKING:
    from selector_patch.harness import LoadedSelector

FILENAME = "test_te_attn_guards.py"
_DEFAULT = Scenario()
#: What a case leaves unsaid, in the module's docstring (the harness passes BF16 tensors).
DEFAULTS = (
    f"BF16 {_DEFAULT.qkv_layout}, {_DEFAULT.attn_mask_type} mask, head dim {_DEFAULT.head_dim_qk},"
    f" cuDNN {'.'.join(map(str, _DEFAULT.cudnn_version))}"
)
WIDTH = 88
INDENT = "    "


class HazardTests(NamedTuple):
    """What the module checks for one hazard."""

    hazard: Hazard
    #: Requests the guard changes: the unpatched selector chose the hazard's backend.
    witnesses: list[HazardCase]
    #: Their controls that both the unpatched and the patched selector answer with it.
    controls: list[HazardCase]


def _selects(selector: "LoadedSelector", case: HazardCase) -> bool:
    from selector_patch.harness import Unrepresentable

    try:
        return selector.select(case.scenario).role == case.hazard.backend
    except Unrepresentable:
        return False


def chosen_cases(
    source: SelectorSource, original: str, patched: str, hazards: Sequence[Hazard]
) -> tuple[list[HazardTests], str | None]:
    """Per hazard, the cases to write down, as the selector's own code answers them; and what
    the fused answer was assumed to be where TE's C++ was not at hand (None where it was)."""
    from selector_patch.harness import load_selector

    before = load_selector(source, text=original)
    after = load_selector(source, text=patched)
    chosen = []
    for hazard in hazards:
        witnesses = [case for case in cases(hazard, (WITNESS,)) if _selects(before, case)]
        controls = [
            case
            for case in cases(hazard, (CONTROL,), [w.scenario for w in witnesses])
            if _selects(before, case) and _selects(after, case)
        ]
        chosen.append(HazardTests(hazard, witnesses, controls))
    return chosen, before.fused_assumption


def _comment(text: str, indent: str = "") -> list[str]:
    return textwrap.wrap(
        text, WIDTH - len(indent), initial_indent=f"{indent}# ", subsequent_indent=f"{indent}# "
    )


def _cases_table(name: str, selected: Sequence[HazardCase]) -> list[str]:
    lines = [f"{name} = {{"]
    for case in selected:
        lines.append(f"{INDENT}{json.dumps(case.label)}: {{")
        lines += [
            f"{INDENT * 2}{json.dumps(key)}: {literal(value)},"
            for key, value in case.inputs.items()
        ]
        lines.append(f"{INDENT}}},")
    return [*lines, "}"]


def _test(hazard: Hazard, table: str, kind: str) -> list[str]:
    """`test_tea001_witness_does_not_select_fa4` / `test_tea001_control_keeps_fa4`."""
    backend, prefix = hazard.backend, f"test_{hazard.id.lower()}"
    if kind == WITNESS:
        name = f"{prefix}_witness_does_not_select_{backend.lower()}"
        check, doc = "assert_not_selected", f"Requests inside {hazard.id}: TE must not choose"
    else:
        name = f"{prefix}_control_keeps_{backend.lower()}"
        check, doc = "assert_selected", f"Requests next to {hazard.id}: TE must still choose"
    return [
        "",
        "",
        f'@pytest.mark.parametrize("case", {table})',
        f"def {name}(te_selector, case):",
        f'{INDENT}"""{doc} {backend}."""',
        f"{INDENT}{check}(te_selector.select(**{table}[case]), {json.dumps(hazard.id)})",
    ]


def _selector_expression(source: SelectorSource, directory: Path) -> str:
    """The selector under test - its TE tree, else its file - as a path relative to the test
    module, so that the module and the tree can move together."""
    target = source.root if source.relative is not None else source.path
    relative = Path(os.path.relpath(target.resolve(), directory.resolve())).parts
    here = "Path(__file__).resolve()"
    if all(part == ".." for part in relative):  # also the test module's own directory: ()
        return f"{here}.parents[{len(relative)}]"
    return f"{here}.parent.joinpath({', '.join(json.dumps(part) for part in relative)})"


def render(
    source: SelectorSource,
    directory: Path,
    chosen: Sequence[HazardTests],
    fused_assumption: str | None = None,
) -> str:
    """The test module's text; `fused_assumption` as `chosen_cases` gives it."""
    where = source.relative or source.path.name
    version = f"TE {source.te_version}" if source.te_version else "TE"
    lines = [
        '"""Attention-backend selection tests for the guards te-attn-guards inserted.',
        "",
        *textwrap.wrap(
            f"Written by `python -m codemods.apply --emit-tests` for {where} ({version}). A "
            "hazard's witnesses are requests its selector answered with the hazard's backend "
            "before the guard: TE must not choose that backend now. Its controls are "
            "neighbouring requests outside the hazard, where TE must still choose it. The "
            "tests run TE's own selector on a virtual device (no GPU) through te-attn-guards' "
            "pytest plugin; every input a case does not name keeps the plugin's default "
            f"({DEFAULTS}). "
            + (
                f"When the cases were chosen, {fused_assumption}."
                if fused_assumption
                else "cuDNN's fused-attention answer is TE's own C++."
            ),
            WIDTH,
        ),
        '"""',
        "",
        "from pathlib import Path",
        "",
        "import pytest",
        "",
        "from selector_patch.testing import assert_not_selected, assert_selected",
        "",
        "",
        '@pytest.fixture(scope="module")',
        "def te_selector(load_te_selector):",
        f'{INDENT}"""The selector this module was written for, wherever pytest runs from."""',
        f"{INDENT}return load_te_selector({_selector_expression(source, directory)})",
    ]
    for hazard, witnesses, controls in chosen:
        prefix = hazard.id
        lines += ["", ""]
        lines += _comment(f"{hazard.id}: {hazard.title}.")
        if not witnesses:
            lines += _comment(
                f"No request of the registry's makes the unpatched selector choose "
                f"{hazard.backend} on the virtual device: no cases."
            )
            continue
        lines += _cases_table(f"{prefix}_WITNESSES", witnesses)
        if controls:
            lines += ["", *_cases_table(f"{prefix}_CONTROLS", controls)]
        lines += _test(hazard, f"{prefix}_WITNESSES", WITNESS)
        if controls:
            lines += _test(hazard, f"{prefix}_CONTROLS", CONTROL)
    return "\n".join(lines) + "\n"


def emit(
    directory: Path,
    source: SelectorSource,
    original: str,
    patched: str,
    plan: Plan,
    *,
    force: bool = False,
) -> Path:
    """Write the test module for the hazard guards `plan` inserted into `original` (giving
    `patched`) into `directory`; an existing file with other content needs `force`."""
    path = directory / FILENAME
    guarded = {i.hazard.id: i.hazard for i in plan.insertions if i.hazard is not None}
    hazards = [guarded[hazard_id] for hazard_id in plan.statuses if hazard_id in guarded]
    try:
        from selector_patch.harness import LoadError
    except ImportError as error:
        raise FileError(
            f"{path}: choosing the cases runs the selector, which needs te-attn-guards[harness]"
            f" ({error})"
        ) from None
    try:
        chosen, fused_assumption = chosen_cases(source, original, patched, hazards)
    except LoadError as error:  # one line: the selector file and what its code did
        raise FileError(f"{path}: cannot run the selector to choose the cases: {error}") from None
    data = render(source, directory, chosen, fused_assumption).encode("utf-8")
    if path.is_file() and path.read_bytes() == data:
        return path
    if path.exists() and not force:
        raise FileError(f"{path}: exists with other content; pass --force to replace it")
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise FileError(f"{directory}: cannot create: {error.strerror}") from None
    replace_atomically(path, data)
    return path
