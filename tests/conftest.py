"""Session fixtures: real TE releases, fetched once into the user cache and loaded once.

`release("2.20.2")` resolves a release (downloading its wheel on first use), `loaded("2.20.2")`
loads its selector on the virtual device. Both are cached for the session; tests that change a
loaded module (the runtime patch) load their own copy with `load_selector`.
"""

from __future__ import annotations

from typing import Callable

import pytest

from selector_patch.sources import SelectorSource, resolve


@pytest.fixture(scope="session")
def release() -> Callable[[str], SelectorSource]:
    resolved: dict[str, SelectorSource] = {}

    def get(version: str) -> SelectorSource:
        if version not in resolved:
            resolved[version] = resolve(version)
        return resolved[version]

    return get


@pytest.fixture(scope="session")
def loaded(release):
    from selector_patch.harness import load_selector

    selectors = {}

    def get(version: str):
        if version not in selectors:
            selectors[version] = load_selector(release(version))
        return selectors[version]

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
