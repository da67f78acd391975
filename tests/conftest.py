"""Session fixtures: real TE releases, fetched once into the user cache.

`release("2.20.2")` resolves a release (downloading its wheel on first use), cached for the
session. Selectors are loaded the way every user of the package loads them, through the pytest
plugin's `load_te_selector("2.20.2")` (`selector_patch.pytest_plugin`), which also loads each
once per session; `.loaded` is the harness's `LoadedSelector`. Tests that change a loaded module
(the runtime patch) or load replacement text load their own copy with `load_selector`.
"""

from __future__ import annotations

import ast
import atexit
import functools
import gc
import hashlib
import os
import pickle
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Callable

import pytest

from selector_patch.sources import SelectorSource, resolve
from selector_patch.te_cxx import TE_CXX_VARIABLE
from selector_patch.te_lib import LIBRARIES_VARIABLE

if TYPE_CHECKING:
    from selector_patch.harness import LoadedSelector
    from selector_patch.verify import HazardReport

#: TE's C++ for 26 releases, test data beside the checkout (`../shared/te-cxx`, see its README).
#: Wherever it is present (and a compiler is) the harness's fused answers are TE's own, in this
#: process and in the processes tests start; elsewhere the tests that need it skip, saying why.
TE_CXX = Path(
    os.environ.get(TE_CXX_VARIABLE) or Path(__file__).resolve().parents[2] / "shared" / "te-cxx"
)
NO_TE_CXX = (
    f"no TE C++ at {TE_CXX} (../shared/te-cxx beside the checkout)"
    if not TE_CXX.is_dir()
    else (
        None
        if shutil.which(os.environ.get("CXX") or "g++") or shutil.which("c++")
        else "no C++ compiler on PATH to compile TE's C++ with"
    )
)
if NO_TE_CXX is None:
    os.environ[TE_CXX_VARIABLE] = str(TE_CXX)
else:
    os.environ.pop(TE_CXX_VARIABLE, None)
#: The only releases whose compiled library (`selector_patch.te_lib`) the suite uses, and so
#: fetches: the cu13 wheels of 2.18.0 (279.5 MB, beside its C++ tree) and 2.19.0 (244.6 MB, no
#: public source). Every other release without a tree here (2.6.0, 2.20.2) keeps the stated
#: assumption, whatever the cache holds.
LIBRARY_RELEASES = ("2.18.0", "2.19.0")
os.environ[LIBRARIES_VARIABLE] = ",".join(LIBRARY_RELEASES)

#: The plugin's own tests run inner pytest sessions.
pytest_plugins = ("pytester",)


def pytest_configure(config) -> None:
    """The cyclic collector runs less often; an xdist worker's process ends as soon as its exit
    handlers have run (the controller's exit status is the run's).

    A test process holds every release it loaded and every grid's answers it keeps (three to
    four million objects per worker at the end of a run). Each full collection walks them all,
    and at the default thresholds the two workers ran 150 of them, some 200 s of the suite's
    CPU; a young generation of 100,000 objects lets a test's short-lived structures die before
    they are promoted. The interpreter's own teardown of a worker's heap took another ten
    seconds at the end of each run, with the last results long sent."""
    gc.set_threshold(100_000, 20, 10)
    if os.environ.get("PYTEST_XDIST_WORKER"):
        atexit.register(_end_now)  # handlers run last-in first-out: this one after the tests'


def _end_now() -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


@pytest.fixture(scope="session")
def release() -> Callable[[str], SelectorSource]:
    resolved: dict[str, SelectorSource] = {}

    def get(version: str) -> SelectorSource:
        if version not in resolved:
            resolved[version] = resolve(version)
        return resolved[version]

    return get


class CodemodResult:
    """A release's selector before and after `codemods.apply.transform` and the selection diff of
    the two, each once per test run (a transform plans every hazard and proves its result, the
    diff asks both selectors some 100,000 requests on the newest releases, and each worker's
    tests judge them: `shared_file`), and the result loaded in the harness, once per session."""

    def __init__(self, source: SelectorSource, shared_file, load_te_selector) -> None:
        self.source = source
        self.original = source.path.read_text()
        name = f"transform-{source.te_version}.pickle"
        made = shared_file(name, lambda: pickle.dumps(self._transform()))
        self.result, self.statuses = pickle.loads(made.read_bytes())
        self._shared_file = shared_file
        self._load_te_selector = load_te_selector
        self._report: dict | None = None

    def _transform(self) -> tuple[str, dict[str, str]]:
        from codemods.apply import transform
        from selector_patch.registry import HAZARDS

        return transform(self.original, HAZARDS)

    @functools.cached_property
    def selector(self) -> "LoadedSelector":
        """The result in the harness, for the tests that run it and the selection diff."""
        from selector_patch.harness import load_selector

        return load_selector(self.source, text=self.result)

    @property
    def selection_report(self) -> dict:
        if self._report is None:
            name = f"selection-report-{self.source.te_version}.pickle"
            path = self._shared_file(name, self._selection_report)
            self._report = pickle.loads(path.read_bytes())
        return self._report

    def _selection_report(self) -> bytes:
        from codemods.selection import selection_report
        from selector_patch.registry import HAZARDS

        released = self._load_te_selector(self.source.te_version).loaded  # the session's
        return pickle.dumps(
            selection_report(
                self.source,
                self.original,
                self.result,
                HAZARDS,
                quiet=True,
                loaded=(released, self.selector),
            )
        )


@pytest.fixture(scope="session")
def codemod_result(release, shared_file, load_te_selector) -> Callable[[str], CodemodResult]:
    """`codemod_result("2.17.1")`: the codemod's result on a release, once per session."""
    results: dict[str, CodemodResult] = {}

    def get(version: str) -> CodemodResult:
        if version not in results:
            results[version] = CodemodResult(release(version), shared_file, load_te_selector)
        return results[version]

    return get


@pytest.fixture(scope="session")
def shared_file(tmp_path_factory) -> Callable[[str, Callable[[], bytes]], Path]:
    """`shared_file(name, make)`: a file holding `make()`, made once per test run: the xdist
    workers of a run share one directory (their base directories' parent), the first to ask
    writes the file under a lock, and the others, waiting on the lock, read it."""
    from codemods.files import locked, replace_atomically

    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = tmp_path_factory.getbasetemp().parent / "shared"
        root.mkdir(exist_ok=True)
    else:
        root = tmp_path_factory.mktemp("shared")

    def get(name: str, make: Callable[[], bytes]) -> Path:
        path, lock = root / name, root / f"{name}.lock"
        lock.touch()
        with locked(lock):
            if not path.exists():
                replace_atomically(path, make())
        return path

    return get


def _shape(calls) -> tuple:
    """TE's FA4 calls without their lines: what decides the cases mined through them."""
    from lint_plugin.mine.cute.kernel import BACKEND

    return tuple(
        (
            call.function,
            tuple(sorted((name, ast.dump(value)) for name, value in call.keywords.items())),
            tuple(ast.dump(argument) for argument in call.positional),
            call.starred,
        )
        for call in calls
        if call.backend == BACKEND
    )


@pytest.fixture(scope="session")
def mined_kernel(release, shared_file) -> Callable[..., object]:
    """`mined_kernel("flash-attn-4", "4.0.0b36", "2.20.2")`: what the miner returns for a
    flash-attn-4 release through TE's calls (`cute.mine`, a list of cases), and
    `mined_kernel("flash-attn", "2.8.3")` for a flash-attn release (`cuda.mine`, its `Mined`; it
    reads no TE calls). Mining a flash-attn-4 release costs some 10 s of CPU and several modules
    mine the same pairs (`test_mine_release`, `test_fa4_sm8x`, `test_mine_after_codemod`,
    `test_mine_cuda_release`), so each is mined once per test run (`shared_file`), keyed by the
    kernel's version and the shape of TE's calls into it (`_shape`): releases whose calls pass
    the same parameters the same way get the same cases (only the cited lines differ)."""
    calls_of: dict[str, tuple] = {}
    found: dict[tuple, object] = {}

    def make(distribution: str, version: str, calls) -> bytes:
        if calls is None:
            from lint_plugin.mine.cuda import mine
            from lint_plugin.mine.cuda.source import from_release

            return pickle.dumps(mine(from_release(version)))
        from lint_plugin.mine.cute import mine
        from lint_plugin.mine.cute.kernel import from_release

        return pickle.dumps(mine(from_release(version), calls))

    def get(distribution: str, version: str, te: str | None = None):
        from lint_plugin.mine.cute.kernel import DISTRIBUTION
        from lint_plugin.mine.te_calls import kernel_calls

        calls = None
        if distribution == DISTRIBUTION:
            if te not in calls_of:
                calls_of[te] = kernel_calls(release(te))
            calls = calls_of[te]
        key = (distribution, version, None if calls is None else _shape(calls))
        if key not in found:
            digest = hashlib.sha256(repr(key).encode("utf-8")).hexdigest()[:16]
            path = shared_file(
                f"mined-{distribution}-{version}-{digest}.pickle",
                lambda: make(distribution, version, calls),
            )
            found[key] = pickle.loads(path.read_bytes())
        return found[key]

    return get


def alone(release, tmp_path: Path, version: str) -> Path:
    """The release's selector as `upstream.py`, in an empty directory (`git show REV:path >
    upstream.py`): `sources` places it in the release's tree (`test_loose_file`)."""
    directory = tmp_path / version
    directory.mkdir()
    path = directory / "upstream.py"
    path.write_bytes(release(version).path.read_bytes())
    return path


@pytest.fixture(scope="session")
def own_selection(
    shared_file, load_te_selector, release, tmp_path_factory
) -> Callable[[str], tuple[str, str]]:
    """`own_selection("2.20.2")`: the snapshot text of the release's selection over its own grid,
    twice, from two loads: the session's loaded selector (the plugin's) and the release's
    selector file alone (`alone`), a load of its own that must answer as the release does. Each
    is a whole grid (tens of seconds on the newest releases), taken once per test run for the
    tests that judge it (`test_snapshot`, `test_selection_diff`, `test_loose_file`). The second
    load serves both the two-loads check and the file-alone one (`test_loose_file`), which
    would otherwise ask the grid a third time."""
    from selector_patch.harness import load_selector
    from selector_patch.snapshot import take

    texts: dict[str, tuple[str, str]] = {}

    def get(version: str) -> tuple[str, str]:
        if version not in texts:
            loads = {
                "session": lambda: load_te_selector(version).loaded,
                "alone": lambda: load_selector(
                    alone(release, tmp_path_factory.mktemp("alone"), version)
                ),
            }
            texts[version] = tuple(
                shared_file(
                    f"selection-{version}-{name}.json",
                    lambda load=load: take(load()).to_text().encode("utf-8"),
                ).read_text(encoding="utf-8")
                for name, load in loads.items()
            )
        return texts[version]

    return get


@pytest.fixture(scope="session")
def release_reports(shared_file, load_te_selector) -> Callable[[str], dict[str, HazardReport]]:
    """`release_reports("2.20.2")`: the harness's report on each registry hazard for the release
    as released (`selector_patch.verify`), made once per test run for the corpus tests that
    judge it (`test_harness_corpus`, `test_analysis_corpus`)."""
    from selector_patch.verify import verify

    reports: dict[str, dict[str, HazardReport]] = {}

    def make(version: str) -> bytes:
        return pickle.dumps(verify(load_te_selector(version).loaded))

    def get(version: str) -> dict[str, HazardReport]:
        if version not in reports:
            path = shared_file(f"reports-{version}.pickle", lambda: make(version))
            reports[version] = {report.id: report for report in pickle.loads(path.read_bytes())}
        return reports[version]

    return get


@pytest.fixture(scope="session")
def te_cxx() -> Path:
    """The directory of per-release C++ trees; the test skips where it or a compiler is absent."""
    if NO_TE_CXX is not None:
        pytest.skip(NO_TE_CXX)
    return TE_CXX


# Hypothesis profiles (tests/test_fuzz_differential.py). "ci" is derandomized - the same
# mutants on every run - and small enough for each CI run (`CI=true` selects it); "dev", the
# local default, draws new mutants each run; `HYPOTHESIS_PROFILE=long` runs a few hundred.
# A mutant costs about a second (harness, analyzer, codemod and harness again), so no deadline.
from hypothesis import HealthCheck, settings  # noqa: E402

_FUZZ = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("ci", derandomize=True, max_examples=20, **_FUZZ)
settings.register_profile("dev", max_examples=20, **_FUZZ)
settings.register_profile("long", max_examples=400, **_FUZZ)
settings.load_profile(
    os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") == "true" else "dev")
)
