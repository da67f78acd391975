"""Real selectors for the fuzzers to rewrite: a release as released, or after the codemod.

`base("2.20.2+codemod")` is TE 2.20.2's selector with `codemods.apply.transform`'s guards in it,
so that registry guards exist to be broken (`test_fuzz_differential`) or respelt
(`test_fuzz_spellings`). Parsed once per process.
"""

from __future__ import annotations

import ast
import collections
import functools

from codemods.apply import transform
from selector_patch.registry import HAZARDS
from selector_patch.sources import SelectorSource, resolve


@functools.lru_cache(maxsize=None)
def base(name: str) -> tuple[SelectorSource, ast.Module]:
    version, _, patched = name.partition("+")
    source = resolve(version)
    text = source.path.read_text(encoding="utf-8")
    if patched:
        text = transform(text, HAZARDS)[0]
    return source, ast.parse(text)


def write_tally(request, label: str, tally: collections.Counter[str]) -> None:
    """Print a fuzzer's counts past pytest's capture, so a run shows what it exercised."""
    if tally:
        plugins = request.config.pluginmanager
        counts = ", ".join(f"{key}: {value}" for key, value in sorted(tally.items()))
        with plugins.get_plugin("capturemanager").global_and_fixture_disabled():
            plugins.get_plugin("terminalreporter").write_line(f"\n{label}: {counts}")
