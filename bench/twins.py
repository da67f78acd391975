"""TEA's cost as a user's flake8 process pays it: twin virtual environments, one with the plugin.

    python bench/twins.py [SOURCE] [--repeat N] [--instructions] [--te-fixes]

Two virtual environments hold the same packages at the same versions as this one (flake8 and
its checkers, libcst, packaging); only one also has this project installed, from a wheel built
of the working tree (not editable: a user's site-packages, bytecode precompiled at install).
Both run `flake8` through their own console script on a copy of the selector, bytecode caching
on, in interleaved rounds (`processes.interleaved`). The figure is what TEA adds against what
flake8's own default checks cost there: (with TEA - without) / (without - an interpreter of the
same environment that does nothing), target at most 0.10. With `--instructions` the same
processes are counted under callgrind (`processes.counted`). With `--te-fixes` a fourth process
runs in the same rounds, and is counted too: TEA on a copy in a tree that records the release
and sets `te-fixes = true`, TE's own later fixes analysed too; it is reported beside the
default one.

The environments are built afresh in a scratch folder each run. The packages come from the
wheelhouse in `~/.cache/te-attn-guards/bench-wheels` when it has them (offline), else pip
downloads them there first.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Sequence

from processes import counted, interleaved, release_tree  # bench/processes.py, beside this
from selector_patch.sources import SelectorSource, resolve

#: What a flake8 run with TEA loads besides the standard library, as in this environment.
PACKAGES = ("flake8", "pyflakes", "pycodestyle", "mccabe", "libcst", "pyyaml", "packaging")
WHEELHOUSE = Path.home() / ".cache" / "te-attn-guards" / "bench-wheels"
#: What the wheel is not built from.
NOT_BUILT = (".git", "build", "dist", "*.egg-info", "__pycache__", ".venv", ".hypothesis")
#: Where the ratio should stay.
TARGET = 0.10


def pinned() -> list[str]:
    """`PACKAGES` pinned at the versions installed here."""
    return [f"{name}=={importlib.metadata.version(name)}" for name in PACKAGES]


def pip(*arguments: str, python: Path, quiet: bool = False) -> None:
    """This environment's pip acting on the environment of `python` (which needs none);
    `quiet` also silences its errors (an attempt that may fail)."""
    command = [sys.executable, "-m", "pip", "--python", str(python), "--quiet", *arguments]
    subprocess.run(command, check=True, stderr=subprocess.DEVNULL if quiet else None)


def twin_environments(project: Path, scratch: Path) -> tuple[Path, Path]:
    """The `bin` folders of the environment without the plugin and of the one with it."""
    requirements = pinned()
    # Built from a copy: setuptools builds in the source tree, and a `build/` left from an
    # earlier build would bring back modules deleted since.
    source = scratch / "source"
    shutil.copytree(project, source, ignore=shutil.ignore_patterns(*NOT_BUILT))
    wheel_dir = scratch / "wheel"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation"]
        + ["--wheel-dir", str(wheel_dir), str(source)],
        check=True,
    )
    (plugin,) = wheel_dir.glob("*.whl")
    offline = ["install", "--no-index", "--find-links", str(WHEELHOUSE), "--no-deps"]
    WHEELHOUSE.mkdir(parents=True, exist_ok=True)
    folders = []
    for name, extra in (("plain", []), ("tea", [str(plugin)])):
        environment = scratch / name
        subprocess.run(
            [sys.executable, "-m", "venv", "--without-pip", str(environment)], check=True
        )
        python = environment / "bin" / "python"
        try:
            pip(*offline, *requirements, python=python, quiet=True)
        except subprocess.CalledProcessError:
            pip("download", "--no-deps", "--dest", str(WHEELHOUSE), *requirements, python=python)
            pip(*offline, *requirements, python=python)
        if extra:
            pip("install", "--no-deps", *extra, python=python)
        folders.append(environment / "bin")
    return folders[0], folders[1]


def with_te_fixes(source: SelectorSource, scratch: Path) -> Path:
    """A copy of `source`'s selector in a tree recording its release (`processes.release_tree`)
    whose `pyproject.toml` sets `te-fixes = true`."""
    tree = scratch / "te-fixes"
    target = release_tree(source, source.path.read_text(), tree)
    (tree / "pyproject.toml").write_text("[tool.te-attn-guards]\nte-fixes = true\n")
    return target


def measure(
    source: SelectorSource, repeat: int, instructions: bool, te_fixes: bool, scratch: Path
) -> None:
    """Print the twin comparison on `source`'s selector (copied into `scratch` first)."""
    project = Path(__file__).resolve().parent.parent
    plain, tea = twin_environments(project, scratch)
    target = scratch / "utils.py"
    shutil.copyfile(source.path, target)
    commands = [
        [str(plain / "python"), "-c", "pass"],
        [str(plain / "flake8"), str(target)],
        [str(tea / "flake8"), str(target)],
    ]
    if te_fixes:
        commands.append([str(tea / "flake8"), str(with_te_fixes(source, scratch))])
    (bare, without, with_tea, *fixes) = interleaved(commands, repeat, scratch)
    print(f"flake8 in twin environments on the selector, {repeat} interleaved rounds (median)")
    for kind, index in (("wall", 0), ("CPU", 1)):
        report(kind, bare[index] * 1000, without[index] * 1000, with_tea[index] * 1000, "ms")
        for fixed in fixes:
            report(
                f"{kind}+fixes",
                bare[index] * 1000,
                without[index] * 1000,
                fixed[index] * 1000,
                "ms",
            )
    if instructions:
        (bare, without, with_tea, *fixes) = (count / 1e6 for count in counted(commands, scratch))
        report("instructions", bare, without, with_tea, "M")
        for fixed in fixes:
            report("instr+fixes", bare, without, fixed, "M")
    print(f"  target: TEA <= {TARGET:.2f}x of flake8's own checks")


def report(kind: str, bare: float, without: float, with_tea: float, unit: str) -> None:
    """One line: the interpreter, flake8 without and with TEA, and the ratio."""
    own, added = without - bare, with_tea - without
    print(
        f"  {kind:12s} interpreter {bare:7.1f} {unit}, flake8 {without:7.1f} {unit}"
        f" (own checks {own:7.1f}), with TEA {with_tea:7.1f} {unit}:"
        f" TEA adds {added:6.1f} {unit} = {added / own:.3f}x"
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", nargs="?", default="2.20.2")
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument(
        "--instructions", action="store_true", help="count instructions too (valgrind)"
    )
    parser.add_argument(
        "--te-fixes", action="store_true", help="also time TEA with `te-fixes = true`"
    )
    args = parser.parse_args(argv)
    if args.instructions and shutil.which("valgrind") is None:
        parser.error("--instructions needs valgrind on PATH (Debian: apt install valgrind)")
    with tempfile.TemporaryDirectory() as scratch:
        measure(resolve(args.source), args.repeat, args.instructions, args.te_fixes, Path(scratch))


if __name__ == "__main__":
    main()
