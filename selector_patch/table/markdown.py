"""The selection table as GitHub-flavoured markdown, to paste into a PR or an issue.

One table per variant (as shipped, then patched), rows = architectures, one column per request.
A hazard cell is bold and starts with ⚠, followed by the hazard ids, so it survives being pasted
anywhere that drops formatting.
"""

from __future__ import annotations

from typing import Any

from selector_patch.table.matrix import TableData, selection_text

WARNING_SIGN = "⚠"


def _escape(text: str) -> str:
    return text.replace("|", "\\|")


def _cell(cell: dict[str, Any]) -> str:
    text = _escape(selection_text(cell))
    if cell["hazards"]:
        return f"**{WARNING_SIGN} {text} ({', '.join(cell['hazards'])})**"
    return text


def _table(data: TableData, variant: dict[str, Any]) -> list[str]:
    headers = ["architecture"] + [
        f"{column['hazard']} {column['kind']}<br>{_escape(column['label'])}"
        for column in data["columns"]
    ]
    lines = [f"## {variant['title']}", "", "| " + " | ".join(headers) + " |"]
    lines.append("| " + " | ".join("---" for _ in headers) + " |")
    for row in variant["rows"]:
        cells = [row["architecture"]] + [_cell(cell) for cell in row["cells"]]
        lines.append("| " + " | ".join(cells) + " |")
    return lines + [""]


def _hazard_legend(data: TableData) -> dict[str, tuple[str, str]]:
    """Per hazard in the table: its title and the settings its columns share."""
    legend: dict[str, tuple[str, str]] = {}
    for column in data["columns"]:
        legend.setdefault(column["hazard"], (column["title"], column["settings"]))
    return legend


def render(data: TableData) -> str:
    lines = [f"# Attention backend selected by TE {data['te_version'] or ''}".rstrip(), ""]
    lines += [f"Selector: `{data['source']}`", ""]
    if data["fused_assumption"]:
        lines += [f"> {data['fused_assumption']}", ""]
    for variant in data["variants"]:
        lines += _table(data, variant)
    lines += [f"**{WARNING_SIGN} bold**: {data['hazard_cell']}.", ""]
    for hazard, (title, settings) in _hazard_legend(data).items():
        lines.append(f"- {hazard}, {title}. Its columns run with {settings}.")
    return "\n".join(lines) + "\n"
