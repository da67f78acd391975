"""`python -m selector_patch table`: what TE's real selector picks, architecture by request.

`columns` derives the requests from the hazard registry, `matrix` runs them through the harness
(as shipped and with the runtime patch) into plain data, `markdown` and `page` render that data
for a PR comment or as one static HTML file. Importing this package imports torch.
"""

from selector_patch.table import markdown, page
from selector_patch.table.matrix import build

RENDERERS = {"markdown": markdown.render, "html": page.render}

__all__ = ["RENDERERS", "build"]
