"""Session fixtures: real TE releases, fetched once into the user cache.

`release("2.20.2")` resolves a release (downloading its wheel on first use), cached for the
session. Selectors are loaded the way every user of the package loads them, through the pytest
plugin's `load_te_selector("2.20.2")` (`selector_patch.pytest_plugin`), which also loads each
once per session; `.loaded` is the harness's `LoadedSelector`. Tests that change a loaded module
(the runtime patch) or load replacement text load their own copy with `load_selector`.
"""

from __future__ import annotations

from typing import Callable

import pytest

from selector_patch.sources import SelectorSource, resolve

#: The plugin's own tests run inner pytest sessions.
pytest_plugins = ("pytester",)


@pytest.fixture(scope="session")
def release() -> Callable[[str], SelectorSource]:
    resolved: dict[str, SelectorSource] = {}

    def get(version: str) -> SelectorSource:
        if version not in resolved:
            resolved[version] = resolve(version)
        return resolved[version]

    return get


# Hypothesis profiles (tests/test_fuzz_differential.py). "ci" is derandomized - the same
# mutants on every run - and small enough for each CI run (`CI=true` selects it); "dev", the
# local default, draws new mutants each run; `HYPOTHESIS_PROFILE=long` runs a few hundred.
# A mutant costs about a second (harness, analyzer, codemod and harness again), so no deadline.
import os  # noqa: E402

from hypothesis import HealthCheck, settings  # noqa: E402

_FUZZ = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("ci", derandomize=True, max_examples=20, **_FUZZ)
settings.register_profile("dev", max_examples=20, **_FUZZ)
settings.register_profile("long", max_examples=400, **_FUZZ)
settings.load_profile(
    os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") == "true" else "dev")
)
