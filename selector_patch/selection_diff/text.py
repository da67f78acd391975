"""A selection diff as text for a terminal, and as markdown for a PR comment.

Both say, in this order: what was compared with what; once, where cuDNN's fused answer was
assumed rather than TE's C++; how many requests were compared and how many differ; the causes
(the TE log line or C++ warning that explains each group of regions, its class and reason);
then, cause by cause, each region with its change, the hazards that name it, its witness as a
`select()` call, and both sides' TE log lines for the witness.
"""

from __future__ import annotations

from typing import Any

from selector_patch.selection_diff.grouping import tally
from selector_patch.selection_diff.report import Report
from selector_patch.snapshot.codec import decode, spelled


def witness_call(witness: dict[str, Any]) -> str:
    """`select(compute_capability=(8, 0), NVTE_FUSED_ATTN='0')`."""
    arguments = ", ".join(f"{name}={spelled(decode(value))}" for name, value in witness.items())
    return f"select({arguments})"


def pick_line(pick: dict[str, Any]) -> str:
    """`FlashAttention (FA4 4.0.0b24); available: FlashAttention, UnfusedDotProductAttention`."""
    if "error" in pick:
        return f"raised {pick['error']}"
    chosen = pick["backend"]
    if pick.get("role") and pick.get("version"):
        chosen += f" ({pick['role']} {pick['version']})"
    elif pick.get("fused"):
        chosen += f" ({pick['fused']})"
    return f"{chosen}; available: {', '.join(pick.get('available', ())) or 'none'}"


def summary(report: Report) -> str:
    grid = report["grid"]
    shape = (
        f"{len(grid['architectures'])} architectures x {len(grid['modes'])} modes x"
        f" ({2 ** len(grid['switches'])} switch settings x {grid['singles']} single values"
        f" + {grid['pair_settings']} x {grid['pairs']} pairs) of {len(grid['inputs'])} inputs"
    )
    lines = [f"{report['compared']} of {report['configurations']} requests compared ({shape})"]
    for reason, count in sorted(report["not_compared"].items()):
        lines.append(f"{count} not compared: {reason}")
    differences = report["differences"]
    if differences:
        lines.append(f"{report['differing']} differ, in {len(differences)} regions")
        if report["outside_hazards"]:
            lines.append(f"{report['outside_hazards']} of them outside every hazard's region")
    else:
        lines.append("no request differs")
    return "; ".join(lines)


def _sides(report: Report) -> list[str]:
    return [
        f"A: {side_text(report['a'])}",
        f"B: {side_text(report['b'])}",
        *report["fused_assumption"],
    ]


def side_text(side: dict[str, Any]) -> str:
    """`TE 2.18.0, selector 2.18.0`: a side as the report names it."""
    version = f"TE {side['te_version']}" if side["te_version"] else "TE (version unknown)"
    return f"{version}, {side['kind']} {side['name']}"


def _named(difference: dict[str, Any]) -> str:
    return f" [{', '.join(difference['hazards'])}]" if difference["hazards"] else ""


def cause_line(cause: dict[str, Any]) -> str:
    """`[fix] FlashAttention 4 switched off, 3 regions (120 requests): TE names a failure`."""
    count = len(cause["regions"])
    return (
        f"[{cause['class']}] {cause['reason']}; {count} region{'s' if count != 1 else ''}"
        f" ({cause['configurations']} requests)"
    )


def quoted(cause: dict[str, Any]) -> str:
    """The explaining line and who logged it: `B logs: "Disabling ..."`."""
    return f'{cause["side"].upper()} logs: "{cause["line"]}"'


def render_text(report: Report) -> str:
    lines = [*_sides(report), summary(report)]
    causes = {number: cause for number, cause in enumerate(report["causes"], 1)}
    if causes:
        lines.append(tally(list(causes.values())))
        for number, cause in causes.items():
            lines.append(f"  cause {number}. {cause_line(cause)}")
            lines.append(f"     {quoted(cause)}")
    for number, difference in enumerate(report["differences"], 1):
        cause = causes[difference["cause"]]
        if cause["regions"][0] == number:
            lines += ["", f"== cause {difference['cause']}. {cause_line(cause)}", quoted(cause)]
        lines += [
            "",
            f"{number}. {difference['region']}{_named(difference)}"
            f" ({difference['configurations']} requests)",
            f"   witness: {witness_call(difference['witness'])}",
        ]
        for label in ("a", "b"):
            pick = difference[label]
            lines.append(f"   {label.upper()}: {pick_line(pick)}")
            lines += [f"     {line}" for line in pick["log"]]
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def render_markdown(report: Report) -> str:
    lines = ["### Selection diff", ""]
    lines += [f"- {line}" for line in _sides(report)]
    lines += ["", summary(report) + ".", ""]
    differences = report["differences"]
    if not differences:
        return "\n".join(lines)
    causes = report["causes"]
    if causes:
        lines += [
            f"{tally(causes)}.",
            "",
            "| cause | class | reason | explained by | regions | requests |",
            "| --- | --- | --- | --- | --- | --- |",
        ]
        for number, cause in enumerate(causes, 1):
            regions = cause["regions"]
            span = f"{regions[0]}" if len(regions) == 1 else f"{regions[0]}-{regions[-1]}"
            lines.append(
                f"| {number} | {cause['class']} | {_cell(cause['reason'])} |"
                f" {cause['side'].upper()}: `{_cell(cause['line'])}` | {span} |"
                f" {cause['configurations']} |"
            )
        lines.append("")
    lines += [
        "| # | cause | where | change | hazards | requests |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for number, difference in enumerate(differences, 1):
        where = ", ".join([*difference["architectures"], *difference["conditions"]])
        lines.append(
            f"| {number} | {difference['cause']} | {_cell(where)} |"
            f" {_cell(difference['change'])} |"
            f" {', '.join(difference['hazards']) or '-'} | {difference['configurations']} |"
        )
    lines.append("")
    for number, difference in enumerate(differences, 1):
        lines += [
            f"<details><summary>{number}. {_cell(difference['region'])}</summary>",
            "",
            "```python",
            witness_call(difference["witness"]),
            "```",
        ]
        for label in ("a", "b"):
            pick = difference[label]
            lines += [f"{label.upper()}: {pick_line(pick)}", "", "```text", *pick["log"], "```"]
        lines += ["", "</details>", ""]
    return "\n".join(lines)
