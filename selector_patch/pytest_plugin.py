"""te-attn-guards' pytest plugin: fixtures that run a real TE selector on a virtual device.

Registered under pytest's `pytest11` entry point as `te_attn_guards`, so installing the package
is all a project does (`-p no:te_attn_guards` turns it off). A session that requests none of its
fixtures pays for one command-line option: this module imports nothing of the project, of torch
or of TE; the first fixture request loads the selector (and fetches a release into the cache).

    pytest --te-selector PATH_TO_TE_CHECKOUT      # or: a selector .py, `installed`, 2.20.2
    [tool.pytest.ini_options]
    te_selector = "../TransformerEngine"          # relative to the ini file
    te_cxx = "../te-cxx"                          # TE's C++ per release, for a wheel's selector

A checkout answers cuDNN's fused-attention query with its own C++; a released wheel's selector
takes it from `--te-cxx` / the `te_cxx` key / `TE_ATTN_GUARDS_TE_CXX`, else from the release's
own compiled library (`selector_patch.te_lib`), else the answer is an assumption its failure
messages state. Without the harness extra, a session with a selector configured ends at once
with one line saying what to install.

`te_selection_snapshot` compares the selector's picks over its whole grid with a committed
snapshot file (`selector_patch.testing.snapshots`); `--te-snapshot-update` rewrites it, as
syrupy's `--snapshot-update` does. The test-side API (`select`, `hazard_cases`, the assertions)
is `selector_patch.testing`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Callable

import pytest

if TYPE_CHECKING:
    from selector_patch.sources import SelectorSource
    from selector_patch.testing import SelectorUnderTest
    from selector_patch.testing.snapshots import SelectionSnapshot

INI = "te_selector"
UPDATE = "te_snapshot_update"
SOURCE_HELP = (
    "the TE attention selector the te_selector fixture loads: a TE checkout, a selector .py"
    " file, 'installed' or a release such as 2.20.2"
)
CXX_INI = "te_cxx"
CXX_HELP = (
    "directory of per-release TE C++ trees (<version>/transformer_engine/common/...) that answer"
    " cuDNN's fused-attention query for a selector without its own"
)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("te-attn-guards", "te-attn-guards selector tests")
    group.addoption(
        "--te-selector",
        dest=INI,
        metavar="SOURCE",
        default=None,
        help=f"{SOURCE_HELP} (default: the {INI} ini key)",
    )
    parser.addini(INI, f"{SOURCE_HELP}; a relative path is read from the ini file's directory")
    group.addoption(
        "--te-cxx",
        dest=CXX_INI,
        metavar="DIR",
        default=None,
        help=f"{CXX_HELP} (default: the {CXX_INI} ini key, else $TE_ATTN_GUARDS_TE_CXX)",
    )
    parser.addini(CXX_INI, f"{CXX_HELP}; a relative path is read from the ini file's directory")
    group.addoption(
        "--te-snapshot-update",
        dest=UPDATE,
        action="store_true",
        default=False,
        help="rewrite the selection snapshots te_selection_snapshot compares with",
    )


def _configured(config: pytest.Config, name: str) -> str | None:
    """The option `name`, else its ini key (a relative path there is the ini file's neighbour)."""
    option = config.getoption(name)
    if option:
        return option
    value = config.getini(name)
    if not value:
        return None
    if config.inipath is not None and not Path(value).is_absolute():
        beside_ini = config.inipath.parent / value
        if beside_ini.exists():
            return str(beside_ini)
    return value


def configured_source(config: pytest.Config) -> str | None:
    """`--te-selector`, else the `te_selector` ini key."""
    return _configured(config, INI)


def pytest_configure(config: pytest.Config) -> None:
    """A session with a selector configured and no harness extra: one line, exit status 2."""
    if configured_source(config) is None:
        return
    from selector_patch.extras import EXIT_ERROR, without_harness

    missing = without_harness(f"pytest --te-selector {configured_source(config)}")
    if missing is not None:
        pytest.exit(missing, returncode=EXIT_ERROR)


def pytest_report_header(config: pytest.Config) -> list[str]:
    settings = {name: _configured(config, name) for name in (INI, CXX_INI)}
    return [f"te-attn-guards: {name} = {value}" for name, value in settings.items() if value]


@pytest.fixture(scope="session")
def load_te_selector(
    pytestconfig: pytest.Config,
) -> Callable[["str | Path | SelectorSource"], "SelectorUnderTest"]:
    """Load any TE selector once per session: `load_te_selector("2.17.1").select(...)`.

    Takes what `--te-selector` takes (a checkout, a selector file, `installed`, a release
    version) or a resolved `SelectorSource`; each distinct selector is loaded once, its fused
    answers from `--te-cxx` / the `te_cxx` ini key where it has no C++ of its own.
    """
    from selector_patch.extras import without_harness

    missing = without_harness("load_te_selector")
    if missing is not None:
        pytest.fail(missing, pytrace=False)
    from selector_patch.harness import LoadError, load_selector
    from selector_patch.sources import SelectorSource, SourceError, resolve
    from selector_patch.testing import SelectorUnderTest

    loaded: dict[SelectorSource, SelectorUnderTest] = {}
    te_cxx = _configured(pytestconfig, CXX_INI)

    def load(source: "str | Path | SelectorSource") -> SelectorUnderTest:
        __tracebackhide__ = True
        try:
            if not isinstance(source, SelectorSource):
                source = resolve(str(source))
            if source not in loaded:
                loaded[source] = SelectorUnderTest(load_selector(source, te_cxx=te_cxx))
            return loaded[source]
        except (SourceError, LoadError) as error:
            cause = str(error)
        pytest.fail(cause, pytrace=False)  # outside `except`: one line, no chained traceback

    return load


@pytest.fixture(scope="session")
def te_selector(
    pytestconfig: pytest.Config, load_te_selector: Callable[[str], "SelectorUnderTest"]
) -> "SelectorUnderTest":
    """The selector under test (`--te-selector SOURCE` or the `te_selector` ini key), loaded
    once per session on a virtual device: `te_selector.select(compute_capability=(12, 0), ...)`."""
    __tracebackhide__ = True
    source = configured_source(pytestconfig)
    if source is None:
        pytest.fail(
            "te_selector: no TE selector configured; pass --te-selector SOURCE or set"
            f" {INI} in the pytest ini (a TE checkout, a selector file, installed, a version)",
            pytrace=False,
        )
    return load_te_selector(source)


@pytest.fixture
def te_selection_snapshot(
    request: pytest.FixtureRequest, te_selector: "SelectorUnderTest"
) -> "SelectionSnapshot":
    """The selector under test against its committed selection snapshot:
    `te_selection_snapshot.assert_match()` (or `.assert_match(path)`) fails with the regions
    whose picks changed; `--te-snapshot-update` writes the snapshot instead."""
    from selector_patch.testing.snapshots import SelectionSnapshot, default_path

    return SelectionSnapshot(
        te_selector,
        default_path(request.path, request.node.name),
        request.config.getoption(UPDATE),
    )
