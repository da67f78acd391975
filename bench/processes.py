"""What a pre-commit user waits for: whole processes, each against its baseline in the same run.

    python bench/processes.py [SOURCE] [--repeat N]

Every figure is the median of `--repeat` runs, the measured process and its baseline
interleaved (baseline, measured, baseline, ...) so both see the same machine load. SOURCE is a
release or anything `selector_patch.sources.resolve` takes (default: 2.20.2). Printed:

- flake8 with TEA installed against the same flake8 without the plugin, on the selector and on a
  file without one. Without the plugin means another environment: a virtual environment with
  only the same flake8 release, made once in the cache (`--select` does not help: every
  installed plugin runs, flake8 only filters what it reports). Targets: on the selector at most
  0.15x of flake8's own checks added, on a file without a selector under 5 ms added;
- `codemods.apply --check` on an already-guarded selector against `python -c "import ast;
  ast.parse(open(F).read())"` (target: at most 3x);
- `codemods.apply FILE` on the unpatched selector (a fresh copy each run) against a process that
  imports libcst, parses the file and writes `module.code` back (target: at most 1.5x);
- the TEA pass (`TeaChecker.run` on a parsed tree, in process) with 0, 4 and 16 hazards declared
  in a `pyproject.toml`, the registry's with their architectures moved, so each is a hazard of
  its own (target: 16 at most 2x of none).
"""

from __future__ import annotations

import argparse
import ast
import importlib.metadata
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Sequence

from codemods.apply import transform
from selector_patch.registry import HAZARDS, Hazard
from selector_patch.sources import cache_dir, resolve
from timing import median_seconds  # bench/timing.py, beside this script

#: A large standard-library module without a selector (about 6,000 lines).
NON_SELECTOR = Path(ast.__file__).with_name("_pydecimal.py")
#: Architectures the declared hazards of the TEA-pass bench are moved to, one per hazard.
MOVED_TO = ((8, 0), (8, 6), (8, 9), (9, 0), (10, 0), (10, 3), (11, 0), (12, 1))


def interleaved(commands: Sequence[Sequence[str]], repeat: int, cwd: Path) -> list[float]:
    """Median wall time of each command, run in turn `repeat` times."""
    times: list[list[float]] = [[] for _ in commands]
    for _ in range(repeat):
        for index, command in enumerate(commands):
            start = time.perf_counter()
            subprocess.run(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            times[index].append(time.perf_counter() - start)
    return [statistics.median(sample) for sample in times]


def bare_flake8() -> Path:
    """A Python with the same flake8 release and no TEA plugin (made once, in the cache)."""
    version = importlib.metadata.version("flake8")
    venv = cache_dir() / f"bench-flake8-{version}"
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        install = [str(python), "-m", "pip", "install", "-q", f"flake8=={version}"]
        subprocess.run(install, check=True)
    return python


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


def tea_pass(path: Path, pyproject: str, repeat: int, tmp: Path) -> float:
    """Median time of the TEA pass on `path` in a project with `pyproject`."""
    from lint_plugin.plugin import TeaChecker

    project = tmp / f"project-{abs(hash(pyproject))}"
    project.mkdir(exist_ok=True)
    (project / "pyproject.toml").write_text(pyproject)
    copy = project / "utils.py"
    shutil.copyfile(path, copy)
    text = copy.read_text()
    tree, lines = ast.parse(text), text.splitlines(keepends=True)
    return median_seconds(lambda: list(TeaChecker(tree, str(copy), lines).run()), repeat)


def report(name: str, measured: float, baseline: float, target: str) -> None:
    print(f"{name}")
    print(f"  baseline {baseline * 1000:8.1f} ms, measured {measured * 1000:8.1f} ms: {target}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", nargs="?", default="2.20.2")
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    source = resolve(args.source)
    repeat = args.repeat
    here = Path(__file__).resolve().parent.parent
    with tempfile.TemporaryDirectory() as scratch:
        tmp = Path(scratch)
        selector = tmp / "utils.py"
        shutil.copyfile(source.path, selector)
        plain = tmp / NON_SELECTOR.name
        shutil.copyfile(NON_SELECTOR, plain)

        bare = bare_flake8()
        for path, name in ((selector, "selector"), (plain, "file without a selector")):
            without, with_tea = interleaved(
                [
                    [str(bare), "-m", "flake8", str(path)],
                    [sys.executable, "-m", "flake8", str(path)],
                ],
                repeat,
                tmp,
            )
            added = with_tea - without
            target = "<= 0.15x added" if name == "selector" else "< 5 ms added"
            report(f"flake8 on the {name}, without / with TEA", with_tea, without, target)
            print(f"  added {added * 1000:.1f} ms = {added / without:.3f}x of flake8's own")

        guarded = tmp / "guarded.py"
        guarded.write_text(transform(source.path.read_text(), HAZARDS)[0])
        parse, check = interleaved(
            [
                [sys.executable, "-c", f"import ast; ast.parse(open({str(guarded)!r}).read())"],
                [sys.executable, "-m", "codemods.apply", "--check", str(guarded)],
            ],
            repeat,
            here,
        )
        report("codemods.apply --check, already guarded / ast.parse", check, parse, "<= 3x")
        print(f"  ratio {check / parse:.2f}x")

        target = tmp / "target.py"
        copy = f"import shutil; shutil.copyfile({str(source.path)!r}, {str(target)!r})"
        libcst = (
            "import libcst, pathlib; p = pathlib.Path({!r});"
            " p.write_text(libcst.parse_module(p.read_text()).code)"
        ).format(str(target))
        codegen, apply = interleaved(
            [
                [sys.executable, "-c", f"{copy}; {libcst}"],
                [
                    sys.executable,
                    "-c",
                    f"{copy}; import runpy, sys; sys.argv = ['x', {str(target)!r}];"
                    " runpy.run_module('codemods.apply', run_name='__main__')",
                ],
            ],
            repeat,
            here,
        )
        report("codemods.apply FILE, unpatched / libcst parse + codegen", apply, codegen, "<= 1.5x")
        print(f"  ratio {apply / codegen:.2f}x (both copy the file first)")

        passes = {
            count: tea_pass(source.path, declared(count), repeat, tmp) for count in (0, 4, 16)
        }
        print("TEA pass with hazards declared in pyproject.toml")
        for count, seconds in passes.items():
            print(f"  {count:2d} declared: {seconds * 1000:8.1f} ms = {seconds / passes[0]:.2f}x")
        print("  target: 16 declared <= 2x none")


if __name__ == "__main__":
    main()
