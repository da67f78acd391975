"""The selection table as one static HTML file: inline CSS, the data as embedded JSON, and a small
inline script that builds the tables from it.

Nothing is fetched, so the file can be attached to a PR or opened from disk. The tables exist
only once the script has run, which is what lets a headless-browser test prove that the page
renders (and renders the hazard cells), rather than that a string was written. Hazard cells
carry `class="hazard"` and `data-hazards`; each table carries `data-variant`. The selection
diff's page (`selection_diff.page`) is built the same way, from `document`, `BASE_STYLE` and
`ELEMENT_SCRIPT`.
"""

from __future__ import annotations

import html
import json

from selector_patch.table.matrix import TableData

#: The look both pages share.
BASE_STYLE = """
body { font: 13px/1.35 system-ui, sans-serif; margin: 20px; color: #1f2328; }
h1 { font-size: 20px; margin: 0 0 4px; }
h2 { font-size: 15px; margin: 16px 0 6px; }
.source { color: #59636e; font-family: ui-monospace, monospace; font-size: 12px; }
table { border-collapse: collapse; }
th, td { border: 1px solid #d1d9e0; padding: 3px 6px; text-align: left; vertical-align: top; }
thead th { background: #f6f8fa; font-weight: 600; }
tbody th { background: #f6f8fa; }
.legend { margin-top: 16px; color: #59636e; }
"""
#: The helper both pages' scripts build their elements with.
ELEMENT_SCRIPT = """
function element(tag, text, attributes) {
  const node = document.createElement(tag);
  if (text !== undefined) node.textContent = text;
  for (const [name, value] of Object.entries(attributes || {})) node.setAttribute(name, value);
  return node;
}
"""

_STYLE = """
td .version { display: block; color: #59636e; font-size: 11px; }
thead th.witness { background: #fff1e5; }
td.hazard { background: #ffebe9; color: #82071e; font-weight: 700; }
td.hazard .version, td.hazard .ids { color: #82071e; }
td.hazard .ids { display: block; font-size: 11px; font-weight: 400; }
"""

_SCRIPT = """
const data = JSON.parse(document.getElementById("table-data").textContent);
const root = document.getElementById("tables");
function header() {
  const thead = element("thead");
  const groups = element("tr");
  const labels = element("tr");
  groups.appendChild(element("th", "architecture", {rowspan: 2}));
  let previous = null;
  for (const column of data.columns) {
    if (previous && previous.textContent === column.hazard) {
      previous.colSpan += 1;
    } else {
      previous = element("th", column.hazard, {title: column.title});
      groups.appendChild(previous);
    }
    labels.appendChild(element("th", column.kind + ": " + column.label,
                               {class: column.kind, title: column.settings}));
  }
  thead.append(groups, labels);
  return thead;
}
for (const variant of data.variants) {
  root.appendChild(element("h2", variant.title));
  const table = element("table", undefined, {"data-variant": variant.name});
  table.appendChild(header());
  const tbody = element("tbody");
  for (const row of variant.rows) {
    const tr = element("tr");
    tr.appendChild(element("th", row.architecture));
    for (const cell of row.cells) {
      // Break TE's CamelCase names between words, so nine columns fit a screen.
      const td = element("td", cell.backend.replace(/([a-z])([A-Z])/g, "$1\\u200b$2"));
      if (cell.flash_version) {
        td.appendChild(element("span", cell.flash_version, {class: "version"}));
      }
      if (cell.hazards.length) {
        td.className = "hazard";
        td.dataset.hazards = cell.hazards.join(" ");
        td.prepend("\\u26a0 ");
        td.appendChild(element("span", cell.hazards.join(", "), {class: "ids"}));
      }
      tr.appendChild(td);
    }
    tbody.appendChild(tr);
  }
  table.appendChild(tbody);
  root.appendChild(table);
}
const legend = element("div", undefined, {class: "legend"});
legend.appendChild(element("p", "\\u26a0 " + data.hazard_cell + "."));
const seen = new Set();
for (const column of data.columns) {
  if (seen.has(column.hazard)) continue;
  seen.add(column.hazard);
  legend.appendChild(element("p", column.hazard + ", " + column.title +
                                  ". Its columns run with " + column.settings + "."));
}
root.appendChild(legend);
"""


def embedded(data: object) -> str:
    """JSON that cannot end the `<script>` element it sits in."""
    return json.dumps(data, indent=1).replace("<", "\\u003c")


def document(
    title: str, sources: list[str], root: str, data_id: str, data: object, style: str, script: str
) -> str:
    """One static page: `title`, a line per source, an empty `root` the script fills from
    `data` (embedded under `data_id`), the shared style and element helper beside the page's."""
    title = html.escape(title)
    lines = "".join(f'<div class="source">{html.escape(line)}</div>\n' for line in sources)
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{title}</title>
<style>{BASE_STYLE}{style}</style>
</head>
<body>
<h1>{title}</h1>
{lines}<div id="{root}"></div>
<noscript>This page builds its tables with JavaScript.</noscript>
<script type="application/json" id="{data_id}">{embedded(data)}</script>
<script>{ELEMENT_SCRIPT}{script}</script>
</body>
</html>
"""


def render(data: TableData) -> str:
    title = f"Attention backend selected by TE {data['te_version'] or ''}".rstrip()
    # the fused answer's assumption, where TE's C++ was not at hand, under the source
    lines = [data["source"], *filter(None, [data["fused_assumption"]])]
    return document(title, lines, "tables", "table-data", data, _STYLE, _SCRIPT)
