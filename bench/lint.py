"""What the TEA plugin adds to a flake8 run, against flake8's own default checks, in one run.

    python bench/lint.py [SOURCE] [--repeat N]

SOURCE is anything `selector_patch.sources.resolve` accepts (default: release 2.20.2). flake8's
`--select` only filters what is reported - every installed plugin still runs - so the
configurations are run through flake8's own `FileChecker` with the plugin list split: the
default checks (pycodestyle, pyflakes, mccabe) without TEA, the same with TEA, and TEA alone.
All include flake8's per-file work (reading, tokenizing, parsing). Printed, as medians:

- on the selector: flake8's default checks, and the plugin alone (`TeaChecker.run()` on an
  already parsed tree: exactly what TEA adds, since flake8 reads and parses a file once for all
  checks), and their ratio (target: at most 1/4); as cross-checks, flake8 with and without TEA
  (their difference is noisier than the plugin's own time) and flake8 running TEA alone;
- the plugin alone on a large file without a selector, per file (target: under 1 ms).
"""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

from flake8.checker import FileChecker
from flake8.main.application import Application
from flake8.plugins.finder import Checkers

from lint_plugin.plugin import TeaChecker
from selector_patch.sources import resolve
from timing import median_seconds  # bench/timing.py, beside this script

#: A large standard-library module without a selector (about 6,000 lines).
NON_SELECTOR = Path(ast.__file__).with_name("_pydecimal.py")


def plugin_sets(path: Path) -> tuple[Checkers, Checkers, Checkers, object]:
    """flake8's loaded checkers: (everything, default checks without TEA, TEA alone)."""
    app = Application()
    app.initialize([str(path)])
    checkers = app.plugins.checkers

    def only(tea: bool) -> Checkers:
        return Checkers(
            *([p for p in group if (p.entry_name == "TEA") == tea] for group in checkers)
        )

    return checkers, only(False), only(True), app.options


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", nargs="?", default="2.20.2")
    parser.add_argument("--repeat", type=int, default=9)
    args = parser.parse_args()

    path = resolve(args.source).path
    everything, default, tea, options = plugin_sets(path)

    def flake8_with(plugins: Checkers):
        return lambda: FileChecker(
            filename=str(path), plugins=plugins, options=options
        ).run_checks()

    default_s = median_seconds(flake8_with(default), args.repeat)
    everything_s = median_seconds(flake8_with(everything), args.repeat)
    tea_s = median_seconds(flake8_with(tea), args.repeat)
    added_s = everything_s - default_s

    text = path.read_text()
    lines = text.splitlines(keepends=True)
    plugin_s = median_seconds(
        lambda: list(TeaChecker(ast.parse(text), str(path), lines).run()), args.repeat
    )
    parse_s = median_seconds(lambda: ast.parse(text), args.repeat)

    other = NON_SELECTOR.read_text()
    other_lines = other.splitlines(keepends=True)
    other_tree = ast.parse(other)
    other_s = median_seconds(
        lambda: list(TeaChecker(other_tree, str(NON_SELECTOR), other_lines).run()), 200
    )

    print(f"selector: {path} ({len(lines)} lines)")
    tea_plugin_s = plugin_s - parse_s
    print(f"flake8 default checks (no TEA): {default_s * 1000:8.1f} ms")
    print(f"TEA plugin (tree given):        {tea_plugin_s * 1000:8.1f} ms")
    print(f"ratio TEA / default checks:     {tea_plugin_s / default_s:8.3f}  (target <= 0.25)")
    print(f"cross-check, flake8 + TEA:      {everything_s * 1000:8.1f} ms")
    print(f"  difference with / without:    {added_s * 1000:8.1f} ms")
    print(f"  flake8 running only TEA:      {tea_s * 1000:8.1f} ms  (its per-file work included)")
    print(f"non-selector file: {NON_SELECTOR.name} ({len(other_lines)} lines)")
    print(f"TEA plugin per file:            {other_s * 1000:8.3f} ms  (target < 1 ms)")


if __name__ == "__main__":
    main()
