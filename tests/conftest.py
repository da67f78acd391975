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
