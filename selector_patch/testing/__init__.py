"""Selector unit tests for any TE selector, on a CPU-only machine: the pytest plugin's public API.

The plugin (`selector_patch.pytest_plugin`, registered under pytest's `pytest11` entry point)
provides the fixtures `te_selector` (the selector named by `--te-selector` or the `te_selector`
ini key, loaded once per session) and `load_te_selector` (any source, loaded once per session).
This package holds what a test module imports:

- `SelectorUnderTest.select(**inputs)`, answering `BackendChoice` (backend, role, version,
  available backends, TE's log lines);
- `hazard_cases(*ids)`: a hazard's witnesses and controls as `pytest.param`s, for
  `@pytest.mark.parametrize("case", hazard_cases("TEA001"))` with `case.inputs`;
- `assert_not_selected(result, hazard)`, `assert_selected(result, hazard)` and
  `assert_case(result, case)`, whose failures say what TE chose, why, and what was expected;
- `assert_selection_matches(selector, path)`: the selector's picks over its whole grid against
  a committed snapshot (the plugin's `te_selection_snapshot` fixture calls it).

Importing it imports neither torch nor Transformer Engine.
"""

from selector_patch.testing.assertions import assert_case, assert_not_selected, assert_selected
from selector_patch.testing.cases import HazardCase, hazard_cases
from selector_patch.testing.selector import BackendChoice, SelectorUnderTest
from selector_patch.testing.snapshots import assert_selection_matches

__all__ = [
    "BackendChoice",
    "HazardCase",
    "SelectorUnderTest",
    "assert_case",
    "assert_not_selected",
    "assert_selected",
    "assert_selection_matches",
    "hazard_cases",
]
