"""Benchmark the virtual-device harness against named baselines.

Prints:
- release load time as a ratio to `python -c "import torch"` (a fresh interpreter, measured in
  this run). Loads run in this process with torch already imported. The first load of a process
  is shown separately from the median over the corpus: it is where anything a TE module body
  imports lazily would be paid (the harness hands TE eager stand-ins for `torch.compile` and
  `torch.compiler`, so `torch._dynamo` / `torch._inductor` are not among them);
- selections per second over the whole witness + control grid of the registry, for 2.20.2 and for
  the 29-release sweep;
- for 2.18.0, whose fused-attention answer is TE's compiled C++ (when `TE_ATTN_GUARDS_TE_CXX`
  names the trees), selections per second with that answer against the same grid with the
  answer given as an override (`fused_backend`, no C++ called): the C++ query's own cost; and
  with the answer from the release's compiled library (no trees: `selector_patch.te_lib`, its
  helper process over a pipe) against the source-compiled answer.

Usage: python bench/harness.py [--repeat N] [--fused-only]  (--fused-only: the 2.18.0 rows)
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

import torch  # noqa: F401  (the baseline's subject; loads below run with it imported)

from selector_patch.harness import Unrepresentable, load_selector
from selector_patch.registry import HAZARDS
from selector_patch.sources import CORPUS_RELEASES, resolve
from selector_patch.te_cxx import TE_CXX_VARIABLE


def import_torch_seconds(repeat: int) -> float:
    """Median wall time of `python -c "import torch"` in a fresh interpreter."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import torch"], check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def grid():
    for hazard in HAZARDS:
        for witness in hazard.witnesses():
            yield witness
            yield from (scenario for _, scenario in hazard.control_scenarios(witness))


def selections_per_second(selector, scenarios, repeat: int) -> float:
    runnable = []
    for scenario in scenarios:  # warm-up; drops what the release cannot express
        try:
            selector.select(scenario)
            runnable.append(scenario)
        except Unrepresentable:
            pass
    start = time.perf_counter()
    for _ in range(repeat):
        for scenario in runnable:
            selector.select(scenario)
    return repeat * len(runnable) / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--fused-only", action="store_true", help="only the 2.18.0 fused rows")
    args = parser.parse_args()
    if args.fused_only:
        fused_rows(resolve("2.18.0"), list(grid()), args.repeat)
        return
    sources = {version: resolve(version) for version in CORPUS_RELEASES}  # fetch outside timing
    baseline = import_torch_seconds(args.repeat)

    start = time.perf_counter()
    newest = load_selector(sources["2.20.2"])
    first = time.perf_counter() - start
    load_times, selectors = {}, {}
    for version, source in sources.items():
        start = time.perf_counter()
        selectors[version] = load_selector(source)
        load_times[version] = time.perf_counter() - start
    median = statistics.median(load_times.values())
    slowest = max(load_times, key=load_times.get)

    rows = [
        ("first load in process (2.20.2)", first),
        ("load 2.20.2 again", load_times["2.20.2"]),
        (f"load, median over {len(sources)} releases", median),
        (f"load, slowest ({slowest})", load_times[slowest]),
    ]
    print(f"{'python -c import torch':<38} {baseline:7.3f} s  (baseline, median of {args.repeat})")
    for label, seconds in rows:
        print(f"{label:<38} {seconds:7.3f} s  ratio {seconds / baseline:5.2f}")

    scenarios = list(grid())
    rate = selections_per_second(newest, scenarios, args.repeat)
    print(f"selections/s, 2.20.2 grid ({len(scenarios)} scenarios)   {rate:9.0f}")
    rates = [selections_per_second(selectors[v], scenarios, 1) for v in sources]
    print(
        f"selections/s, sweep of {len(sources)} releases (median) {statistics.median(rates):9.0f}"
    )
    print(f"selections/s, sweep of {len(sources)} releases (min)    {min(rates):9.0f}")

    fused_rows(sources["2.18.0"], scenarios, args.repeat)


def fused_rows(source, scenarios, repeat: int) -> None:
    """2.18.0's grid: the answer given (baseline), TE's C++ compiled from source, and the
    release's compiled library with no trees configured."""
    with_cxx = load_selector(source)
    if with_cxx.fused_assumption is not None:
        print(f"2.18.0: {with_cxx.fused_assumption}; no C++ query to measure")
        return
    trees = os.environ.pop(TE_CXX_VARIABLE)
    try:
        with_library = load_selector(source)
    finally:
        os.environ[TE_CXX_VARIABLE] = trees
    overridden = [s.with_changes({"fused_backend": "F16_arbitrary_seqlen"}) for s in scenarios]
    rates: dict[str, list[float]] = {"given": [], "cxx": [], "library": []}
    for _ in range(3):  # interleaved, best of three: the machine's load drifts between runs
        rates["given"].append(selections_per_second(with_cxx, overridden, repeat))
        rates["cxx"].append(selections_per_second(with_cxx, scenarios, repeat))
        rates["library"].append(selections_per_second(with_library, scenarios, repeat))
    given, cxx, library = (max(rates[name]) for name in ("given", "cxx", "library"))
    print(f"selections/s, 2.18.0 grid, answer given (baseline) {given:9.0f}")
    print(f"selections/s, 2.18.0 grid, TE's C++ answers       {cxx:9.0f}  ratio {cxx / given:5.2f}")
    print(
        f"selections/s, 2.18.0 grid, TE's library answers   {library:9.0f}"
        f"  ratio {library / given:5.2f}, to the C++ {library / cxx:5.2f}"
    )


if __name__ == "__main__":
    main()
