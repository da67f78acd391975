"""A selection diff as one static HTML page, in the selection table's style (`table.page`).

The causes first (each group of regions one TE log line or C++ warning explains, its class and
reason), then architectures across, regions down: a row is a region's conditions, and each
architecture the region holds on shows both sides' picks; a cell a hazard names is marked as the
table marks a hazard cell. Below, each region's witness and both sides' TE log lines. It is the
table's kind of page (`table.page.document`): the report embedded as JSON and a small inline
script that builds the page from it, so nothing is fetched and a headless browser can prove the
page renders. Changed cells carry `class="changed"` and `data-change`; cells a hazard names also
`class="hazard"` and `data-hazards`.
"""

from __future__ import annotations

from selector_patch.selection_diff.report import Report
from selector_patch.table.page import document

_STYLE = """
tbody th { font-weight: 400; max-width: 420px; }
.assumed { color: #9a6700; font-family: ui-monospace, monospace; font-size: 12px; }
td.changed { background: #fff8c5; }
td.changed .after { display: block; font-weight: 700; }
td.hazard { background: #ffebe9; color: #82071e; }
td.hazard .ids { display: block; font-size: 11px; }
li.cause-fix, li.cause-regression { color: #82071e; }
pre { background: #f6f8fa; padding: 6px; margin: 4px 0 10px; white-space: pre-wrap; }
"""

_SCRIPT = """
const data = JSON.parse(document.getElementById("diff-data").textContent);
const root = document.getElementById("diff");
function picked(pick) {
  if (pick.error) return "raised " + pick.error;
  if (pick.role && pick.version) return pick.backend + " (" + pick.role + " " + pick.version + ")";
  if (pick.fused) return pick.backend + " (" + pick.fused + ")";
  return pick.backend;
}
root.appendChild(element("p", data.summary));
if (data.causes.length) {
  root.appendChild(element("p", data.tally));
  const list = element("ol", undefined, {"data-list": "causes"});
  data.causes.forEach((cause) => {
    const item = element("li", "[" + cause["class"] + "] " + cause.reason + "; regions " +
      cause.regions[0] + "\u2013" + cause.regions[cause.regions.length - 1] + " (" +
      cause.configurations + " requests)", {class: "cause-" + cause["class"]});
    item.appendChild(element("pre", cause.side.toUpperCase() + ": " + cause.line));
    list.appendChild(item);
  });
  root.appendChild(list);
}
for (const line of data.fused_assumption) {
  root.appendChild(element("p", line, {class: "assumed"}));
}
const rows = new Map();
data.differences.forEach((difference, index) => {
  const key = difference.conditions.join(", ") || "every request";
  if (!rows.has(key)) rows.set(key, new Map());
  const archs = difference.architectures.length
    ? difference.architectures : data.grid.architectures;
  for (const arch of archs) rows.get(key).set(arch, [difference, index + 1]);
});
if (rows.size) {
  const table = element("table", undefined, {"data-table": "regions"});
  const head = element("tr");
  head.appendChild(element("th", "region"));
  for (const arch of data.grid.architectures) head.appendChild(element("th", arch));
  const thead = element("thead");
  thead.appendChild(head);
  table.appendChild(thead);
  const tbody = element("tbody");
  for (const [key, cells] of rows) {
    const tr = element("tr");
    tr.appendChild(element("th", key));
    for (const arch of data.grid.architectures) {
      const td = element("td");
      const found = cells.get(arch);
      if (found) {
        const [difference, number] = found;
        td.className = "changed";
        td.dataset.change = difference.change;
        td.appendChild(element("span", picked(difference.a) + " \\u2192"));
        td.appendChild(element("span", picked(difference.b), {class: "after"}));
        td.title = "region " + number + ": " + difference.configurations + " requests";
        if (difference.hazards.length) {
          td.className = "changed hazard";
          td.dataset.hazards = difference.hazards.join(" ");
          td.appendChild(element("span", difference.hazards.join(", "), {class: "ids"}));
        }
      }
      tr.appendChild(td);
    }
    tbody.appendChild(tr);
  }
  table.appendChild(tbody);
  root.appendChild(table);
}
data.differences.forEach((difference, index) => {
  root.appendChild(element("h2", (index + 1) + ". " + difference.region +
    " (cause " + difference.cause + ")"));
  root.appendChild(element("pre", difference.witness_call));
  for (const side of ["a", "b"]) {
    root.appendChild(element("div", side.toUpperCase() + ": " + picked(difference[side])));
    root.appendChild(element("pre", difference[side].log.join("\\n")));
  }
});
root.appendChild(element("p", "A cell: side A's pick \\u2192 side B's, on that architecture," +
  " for every request of the region's row that A answered so. Red: a hazard's guard" +
  " accounts for it.", {class: "legend"}));
"""


def render(report: Report) -> str:
    from selector_patch.selection_diff.grouping import tally
    from selector_patch.selection_diff.text import side_text, summary, witness_call

    page_data = {
        **report,
        "summary": summary(report),
        "tally": tally(report["causes"]),
        "differences": [
            {**difference, "witness_call": witness_call(difference["witness"])}
            for difference in report["differences"]
        ],
    }
    sources = [f"{label}: {side_text(report[label.lower()])}" for label in ("A", "B")]
    title = "Selection diff: what changes from A to B"
    return document(title, sources, "diff", "diff-data", page_data, _STYLE, _SCRIPT)
