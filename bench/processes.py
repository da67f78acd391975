"""What a pre-commit user waits for: whole processes, each against its baseline in the same run.

    python bench/processes.py [SOURCE] [--repeat N] [--instructions]

Every figure is the median of `--repeat` runs, the measured process and its baseline
interleaved (baseline, measured; measured, baseline; ...) so both see the same machine load.
SOURCE is a release or anything `selector_patch.sources.resolve` takes (default: 2.20.2).
Printed:

- flake8 with TEA installed against the same flake8 without the plugin, on the selector and on a
  file without one (`--select` does not help: every installed plugin runs, flake8 only filters
  what it reports). Without the plugin is the same environment with this distribution hidden
  from flake8's plugin discovery (`importlib.metadata.distributions`, which flake8 reads once at
  start): the same interpreter, packages and paths. Both runs go through the same wrapper, which
  reads every distribution's name in both (about 45 ms here) and differs only in the list it
  returns, so the difference is the plugin alone. Targets: on the selector at most 0.15x of
  flake8's own checks added, on a file without a selector under 5 ms added (that difference is
  below the noise of whole processes here, so the plugin's own import and run in a fresh process
  is printed too);
- the same on the selector as a user's process pays it (`twins.py`): flake8 in twin virtual
  environments, only one with this project installed, at least 15 interleaved rounds, what TEA
  adds set against flake8's own checks there (the environment's bare interpreter taken off);
  target: at most 0.10x, in wall time and in instructions;
- `codemods.apply --check` on an already-guarded selector against `python -c "import ast;
  ast.parse(open(F).read())"` (target: at most 2x), and `codemods.apply FILE` on the unpatched
  selector (a fresh copy each run) against a process that imports libcst, parses the file and
  writes `module.code` back (target: at most 1x): `codemod_processes`, which `codemod.py
  --te-fixes` also runs with TE's own later fixes guarded;
- the TEA pass with 0, 4 and 16 hazards declared in a `pyproject.toml`, the registry's with
  their architectures moved, so each is a hazard of its own (target: 16 at most 2x of none): as
  a flake8 process pays it - importing the plugin, preparing the selector and judging it, timed
  inside fresh processes, which the rest of flake8 would only add noise to - and, beside it,
  in one process with the selector already prepared (`analyze_hazards` again on a selector
  whose slice, plain-call run and witnesses are kept), which leaves the hazards' interpreter
  runs alone.

With `--instructions` (valgrind needed), each comparison is also made in instructions: every
process run once more under valgrind's callgrind, the hash seed fixed, which counts the same on
every run where this machine's wall and CPU times of one process vary by a fifth and more
(flake8 on the file without a selector has come out 220 ms slower with a plugin whose own run
there takes 2 ms). A process runs some fifty times slower under it: about ten minutes more.
"""

from __future__ import annotations

import argparse
import ast
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Sequence

from codemods.apply import transform
from selector_patch.config import Config, with_te_fixes
from selector_patch.registry import HAZARDS, Hazard
from selector_patch.sources import SelectorSource, resolve
from timing import median_seconds  # bench/timing.py, beside this script

#: A large standard-library module without a selector (about 6,000 lines).
NON_SELECTOR = Path(ast.__file__).with_name("_pydecimal.py")
#: Architectures the declared hazards of the TEA-pass bench are moved to, one per hazard.
MOVED_TO = ((8, 0), (8, 6), (8, 9), (9, 0), (10, 0), (10, 3), (11, 0), (12, 1))


def interleaved(
    commands: Sequence[Sequence[str]], repeat: int, cwd: Path
) -> list[tuple[float, float]]:
    """Median (wall, CPU) seconds of each command, run in turn `repeat` times after one warm-up,
    in the opposite order every other round: on this machine whichever process runs first in a
    round is slower (by up to a fifth), which a fixed order would charge to one side.

    The processes run as a user's would: with bytecode caching on (this machine's shells set
    PYTHONDONTWRITEBYTECODE, which would make every run compile this project afresh while the
    installed libraries are precompiled); the warm-up writes the caches. CPU time (user + system
    of the child) is printed beside wall time: on a shared machine it is the steadier one.
    """
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    wall: list[list[float]] = [[] for _ in commands]
    cpu: list[list[float]] = [[] for _ in commands]
    for round_ in range(repeat + 1):
        for index in alternating(len(commands), round_):
            command = commands[index]
            used = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            subprocess.run(
                command,
                cwd=cwd,
                env=environment,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            elapsed = time.perf_counter() - start
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            if round_:  # round 0 is the warm-up
                wall[index].append(elapsed)
                cpu[index].append(after.ru_utime - used.ru_utime + after.ru_stime - used.ru_stime)
    return [(statistics.median(w), statistics.median(c)) for w, c in zip(wall, cpu)]


def counted(commands: Sequence[Sequence[str]], cwd: Path) -> list[int]:
    """Instructions one run of each command executes (valgrind's callgrind), bytecode caches
    written by a run before; the hash seed fixed, so that sets iterate alike every time."""
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    environment["PYTHONHASHSEED"] = "0"
    counts = []
    for command in commands:
        quiet = {"cwd": cwd, "env": environment, "stdout": subprocess.DEVNULL}
        subprocess.run(command, stderr=subprocess.DEVNULL, **quiet)
        valgrind = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *command]
        done = subprocess.run(valgrind, stderr=subprocess.PIPE, text=True, **quiet)
        counts.append(int(re.search(r"Collected : (\d+)", done.stderr).group(1)))
    return counts


def alternating(count: int, round_: int) -> range:
    """The order of `count` measured processes in round `round_`: reversed every other round."""
    return range(count) if round_ % 2 else range(count - 1, -1, -1)


#: flake8's command line; `hide` hides this distribution's plugins from flake8. Reading every
#: distribution's name costs the same either way; only the list returned differs.
FLAKE8 = """
import importlib.metadata, sys
from flake8.main.cli import main
everything = importlib.metadata.distributions
def distributions(**kw):
    found = list(everything(**kw))
    others = [d for d in found if d.metadata["Name"] != "te-attn-guards"]
    return others if {hide} else found
importlib.metadata.distributions = distributions
sys.exit(main(sys.argv[1:]))
"""


def flake8(path: Path, *, tea: bool) -> list[str]:
    return [sys.executable, "-c", FLAKE8.format(hide=not tea), str(path)]


def declared(count: int) -> str:
    """A `[tool.te-attn-guards]` table declaring `count` hazards of their own."""
    from lint_plugin.mine.declare import hazard_tables

    hazards = []
    for index in range(count):
        template = HAZARDS[index % len(HAZARDS)]
        arch = MOVED_TO[index // len(HAZARDS) % len(MOVED_TO)]
        mapping = {**template.to_mapping(), "id": f"TEA{10 + index:03d}"}
        mapping["architectures"] = [list(arch)]
        hazards.append(Hazard.from_mapping(mapping))
    return hazard_tables(hazards) if hazards else ""


def project(path: Path, pyproject: str, tmp: Path) -> Path:
    """A copy of `path` in a project of its own with `pyproject`."""
    directory = tmp / f"project-{abs(hash(pyproject))}"
    directory.mkdir(exist_ok=True)
    (directory / "pyproject.toml").write_text(pyproject)
    copy = directory / "utils.py"
    shutil.copyfile(path, copy)
    return copy


def prepared_pass(path: Path, repeat: int) -> float:
    """Median time of judging `path`'s configured hazards in this process, its selector
    prepared once before (slice, plain-call run and witnesses kept): the hazards' runs alone."""
    from lint_plugin.engine.analysis import analyze_hazards, selector
    from lint_plugin.engine.dialect import find_selectors
    from selector_patch.config import load_config

    config = load_config(path)
    tree = ast.parse(path.read_text())
    (function,) = find_selectors(tree, config.selector_functions)
    prepared = selector(tree, function)
    prepared.plain_call  # builds the slice too
    return median_seconds(lambda: analyze_hazards(tree, function, config.hazards), repeat)


#: In a fresh interpreter, what importing the plugin and running it on one file takes.
OWN_COST = """
import ast, sys, time
import flake8.checker, flake8.main.application  # what a flake8 process has loaded before plugins
text = open(sys.argv[1]).read(); tree = ast.parse(text); lines = text.splitlines(True)
start = time.perf_counter()
from lint_plugin.plugin import TeaChecker
list(TeaChecker(tree, sys.argv[1], lines).run())
print(time.perf_counter() - start)
"""


#: `OWN_COST` without the plugin: what the instructions of the TEA pass are counted against.
OWN_BASE = OWN_COST.split("start = ")[0]


def own_cost(paths: Sequence[Path], repeat: int) -> list[float]:
    """The plugin's import and run on each of `paths` in fresh processes (bytecode cached),
    median, the paths interleaved (`alternating`).

    Process-level differences on a file without a selector are below this machine's noise;
    this is the part of them that is the plugin's.
    """
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    runs: list[list[float]] = [[] for _ in paths]
    for round_ in range(repeat + 1):
        for index in alternating(len(paths), round_):
            command = [sys.executable, "-c", OWN_COST, str(paths[index])]
            done = subprocess.run(command, env=environment, capture_output=True, text=True)
            if round_:  # round 0 writes the bytecode caches
                runs[index].append(float(done.stdout))
    return [statistics.median(times) for times in runs]


def report(name: str, measured, baseline, target: str, *, added: bool = False) -> None:
    """One comparison, in wall and CPU time; `added` reports the difference, else the ratio."""
    print(name)
    for kind, index in (("wall", 0), ("CPU", 1)):
        mine, theirs = measured[index], baseline[index]
        if added:
            figure = f"added {(mine - theirs) * 1000:7.1f} ms = {(mine - theirs) / theirs:.3f}x"
        else:
            figure = f"ratio {mine / theirs:.2f}x"
        print(
            f"  {kind:4s} baseline {theirs * 1000:7.1f} ms, measured {mine * 1000:7.1f} ms: {figure}"
        )
    print(f"  target: {target}")


def report_counts(measured: int, baseline: int, *, added: bool = False) -> None:
    """One comparison in instructions (`counted`), as `report` makes it in times."""
    if added:
        more = measured - baseline
        figure = f"added {more / 1e6:7.1f} M = {more / baseline:.3f}x"
    else:
        figure = f"ratio {measured / baseline:.2f}x"
    print(
        f"  instructions baseline {baseline / 1e6:.1f} M, measured {measured / 1e6:.1f} M: {figure}"
    )


def release_tree(source: SelectorSource, text: str, tree: Path) -> Path:
    """`text` written as `source`'s selector in `tree`, a tree that records `source`'s release
    (wheel metadata), as a checkout or an installed TE does: the C++ fixes that release has
    count as guarded, and nothing is matched against the releases to place the file."""
    target = tree / source.path.relative_to(source.root)
    target.parent.mkdir(parents=True)
    target.write_text(text)
    metadata = tree / f"transformer_engine-{source.te_version}.dist-info" / "METADATA"
    metadata.parent.mkdir()
    metadata.write_text(
        f"Metadata-Version: 2.1\nName: transformer_engine\nVersion: {source.te_version}\n"
    )
    return target


def codemod_processes(
    source: SelectorSource,
    repeat: int,
    here: Path,
    tmp: Path,
    *,
    te_fixes: bool = False,
    instructions: bool = False,
) -> None:
    """Print `codemods.apply --check` on an already-guarded copy of `source`'s selector, in a
    tree that records its release as a checkout does (`release_tree`), against
    `python -c "import ast; ast.parse(open(F).read())"`, and `codemods.apply FILE` on an
    unpatched copy (a fresh one each run) against a process that imports libcst, parses the file
    and writes `module.code` back. With `te_fixes`, each comparison also times the command with
    `--te-fixes` in the same rounds, on a copy guarded for TE's own later fixes too."""
    text, version = source.path.read_text(), source.te_version
    guarded = release_tree(source, transform(text, HAZARDS, te_version=version)[0], tmp / "plain")
    commands = [
        [sys.executable, "-c", f"import ast; ast.parse(open({str(guarded)!r}).read())"],
        [sys.executable, "-m", "codemods.apply", "--check", str(guarded)],
    ]
    if te_fixes:
        patched = transform(text, with_te_fixes(Config()), te_version=version)[0]
        guarded_fixes = release_tree(source, patched, tmp / "fixes")
        commands.append(
            [sys.executable, "-m", "codemods.apply", "--check", "--te-fixes", str(guarded_fixes)]
        )
    parse, check, *checks = interleaved(commands, repeat, here)
    report("codemods.apply --check, already guarded / ast.parse", check, parse, "<= 2x")
    for fixed in checks:
        report("codemods.apply --check --te-fixes, guarded so / ast.parse", fixed, parse, "<= 2x")
    if instructions:
        parsed, *checked = counted(commands, here)
        for count in checked:
            report_counts(count, parsed)

    target = tmp / "target.py"
    copy = f"import shutil; shutil.copyfile({str(source.path)!r}, {str(target)!r})"
    libcst = (
        "import libcst, pathlib; p = pathlib.Path({!r});"
        " p.write_text(libcst.parse_module(p.read_text()).code)"
    ).format(str(target))

    def apply(*options: str) -> list[str]:
        argv = ["codemods.apply", *options, str(target)]
        run = (
            f"import runpy, sys; sys.argv = {argv!r};"
            " runpy.run_module('codemods.apply', run_name='__main__')"
        )
        return [sys.executable, "-c", f"{copy}; {run}"]

    commands = [[sys.executable, "-c", f"{copy}; {libcst}"], apply()]
    if te_fixes:
        commands.append(apply("--te-fixes"))
    codegen, applied, *applied_fixes = interleaved(commands, repeat, here)
    title = "codemods.apply FILE{}, unpatched / libcst parse + codegen (both copy the file first)"
    report(title.format(""), applied, codegen, "<= 1x")
    for fixed in applied_fixes:
        report(title.format(" --te-fixes"), fixed, codegen, "<= 1x")
    if instructions:
        generated, *written = counted(commands, here)
        for count in written:
            report_counts(count, generated)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", nargs="?", default="2.20.2")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument(
        "--instructions", action="store_true", help="count instructions too (valgrind)"
    )
    args = parser.parse_args()
    if args.instructions and shutil.which("valgrind") is None:
        parser.error("--instructions needs valgrind on PATH (Debian: apt install valgrind)")
    source = resolve(args.source)
    repeat = args.repeat
    here = Path(__file__).resolve().parent.parent
    with tempfile.TemporaryDirectory() as scratch:
        tmp = Path(scratch)
        selector = tmp / "utils.py"
        shutil.copyfile(source.path, selector)
        plain = tmp / NON_SELECTOR.name
        shutil.copyfile(NON_SELECTOR, plain)

        for path, name in ((selector, "selector"), (plain, "file without a selector")):
            commands = [flake8(path, tea=False), flake8(path, tea=True)]
            without, with_tea = interleaved(commands, repeat, tmp)
            if name == "selector":
                baseline = without[0]  # what the plugin's own cost there is set against
            target = "<= 0.15x added" if name == "selector" else "< 5 ms added"
            report(
                f"flake8 on the {name}, without / with TEA", with_tea, without, target, added=True
            )
            if args.instructions:
                fewer, more = counted(commands, tmp)
                report_counts(more, fewer, added=True)

        from twins import measure  # bench/twins.py, which reuses this module's helpers

        (tmp / "twins").mkdir()
        measure(source, max(repeat, 15), args.instructions, False, tmp / "twins")

        print("  what the plugin itself costs there, inside a fresh process (median):")
        plain_cost, selector_cost = own_cost([plain, selector], repeat)
        print(f"    import and run on {plain.name}: {plain_cost * 1000:.2f} ms")
        print(
            f"    import and run on the selector: {selector_cost * 1000:.1f} ms"
            f" = {selector_cost / baseline:.3f}x of flake8 without TEA there (steadier than the"
            " difference of two processes)"
        )

        codemod_processes(source, repeat, here, tmp, instructions=args.instructions)

        counts = (0, 4, 16)
        copies = [project(source.path, declared(count), tmp) for count in counts]
        fresh = own_cost(copies, repeat)
        prepared = [prepared_pass(copy, repeat) for copy in copies]
        print("TEA pass with hazards declared in pyproject.toml: in a fresh process / prepared")
        for count, first, again in zip(counts, fresh, prepared):
            print(
                f"  {count:2d} declared: {first * 1000:7.1f} ms = {first / fresh[0]:.2f}x"
                f"   / {again * 1000:7.1f} ms = {again / prepared[0]:.2f}x"
            )
        if args.instructions:
            commands = [[sys.executable, "-c", OWN_BASE, str(copies[0])]]
            commands += [[sys.executable, "-c", OWN_COST, str(copy)] for copy in copies]
            bare, *passes = counted(commands, here)
            for count, instructions in zip(counts, passes):
                print(
                    f"  {count:2d} declared: {(instructions - bare) / 1e6:7.1f} M instructions"
                    f" = {(instructions - bare) / (passes[0] - bare):.2f}x"
                )
        print("  target: 16 declared <= 2x none")


if __name__ == "__main__":
    main()
