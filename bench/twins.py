"""TEA's cost as a user's flake8 process pays it: twin virtual environments, one with the plugin.

    python bench/twins.py [SOURCE] [--repeat N] [--instructions] [--te-fixes] [--against REV]

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
default one. With `--against REV`, a third environment holds the plugin as committed at that
git revision (`git archive`), timed in the same rounds on the same copies: a change's effect,
against a baseline measured in the same run (`@REV` lines).

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
    plain = environment(scratch / "plain")
    return plain, environment(scratch / "tea", plugin_wheel(project, scratch))


def plugin_wheel(project: Path, scratch: Path) -> Path:
    """A wheel of `project` (a source tree), built in `scratch`."""
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
    return plugin


def environment(folder: Path, plugin: Path | None = None) -> Path:
    """The `bin` folder of a fresh environment in `folder` holding `PACKAGES` pinned, and
    `plugin` (a wheel) if given."""
    requirements = pinned()
    offline = ["install", "--no-index", "--find-links", str(WHEELHOUSE), "--no-deps"]
    WHEELHOUSE.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    python = folder / "bin" / "python"
    try:
        pip(*offline, *requirements, python=python, quiet=True)
    except subprocess.CalledProcessError:
        pip("download", "--no-deps", "--dest", str(WHEELHOUSE), *requirements, python=python)
        pip(*offline, *requirements, python=python)
    if plugin is not None:
        pip("install", "--no-deps", str(plugin), python=python)
    return folder / "bin"


def revision_environment(project: Path, revision: str, scratch: Path) -> Path:
    """The `bin` folder of an environment with the plugin as committed at `revision` of the
    git checkout `project` (`git archive`): a baseline measured in the same rounds."""
    tree = scratch / "revision"
    tree.mkdir()
    archive = subprocess.run(
        ["git", "-C", str(project), "archive", "--format=tar", revision],
        check=True,
        capture_output=True,
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    built = scratch / "revision-build"
    built.mkdir()
    return environment(scratch / "revision-tea", plugin_wheel(tree, built))


def with_te_fixes(source: SelectorSource, scratch: Path) -> Path:
    """A copy of `source`'s selector in a tree recording its release (`processes.release_tree`)
    whose `pyproject.toml` sets `te-fixes = true`."""
    tree = scratch / "te-fixes"
    target = release_tree(source, source.path.read_text(), tree)
    (tree / "pyproject.toml").write_text("[tool.te-attn-guards]\nte-fixes = true\n")
    return target


def measure(
    source: SelectorSource,
    repeat: int,
    instructions: bool,
    te_fixes: bool,
    scratch: Path,
    against: str | None = None,
) -> None:
    """Print the twin comparison on `source`'s selector (copied into `scratch` first); with
    `against`, the plugin as committed at that revision too, in the same rounds."""
    project = Path(__file__).resolve().parent.parent
    plain, tea = twin_environments(project, scratch)
    target = scratch / "utils.py"
    shutil.copyfile(source.path, target)
    selectors = {"": target}
    if te_fixes:
        selectors["+fixes"] = with_te_fixes(source, scratch)
    plugins = {"": tea}
    if against is not None:
        plugins[f"@{against}"] = revision_environment(project, against, scratch)
    labels = [plugin + selector for plugin in plugins for selector in selectors]
    commands = [
        [str(plain / "python"), "-c", "pass"],
        [str(plain / "flake8"), str(target)],
        *(
            [str(folder / "flake8"), str(path)]
            for folder in plugins.values()
            for path in selectors.values()
        ),
    ]
    bare, without, *timed = interleaved(commands, repeat, scratch)
    print(f"flake8 in twin environments on the selector, {repeat} interleaved rounds (median)")
    for kind, index in (("wall", 0), ("CPU", 1)):
        for label, result in zip(labels, timed):
            report(
                kind + label, bare[index] * 1000, without[index] * 1000, result[index] * 1000, "ms"
            )
    if instructions:
        bare, without, *counts = (count / 1e6 for count in counted(commands, scratch))
        for label, count in zip(labels, counts):
            report(f"instr{label}" if label else "instructions", bare, without, count, "M")
    print(f"  target: TEA <= {TARGET:.2f}x of flake8's own checks")


def report(kind: str, bare: float, without: float, with_tea: float, unit: str) -> None:
    """One line: the interpreter, flake8 without and with TEA, and the ratio."""
    own, added = without - bare, with_tea - without
    print(
        f"  {kind:18s} interpreter {bare:7.1f} {unit}, flake8 {without:7.1f} {unit}"
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
    parser.add_argument(
        "--against",
        metavar="REVISION",
        help="also time the plugin as committed at this git revision (a baseline, same rounds)",
    )
    args = parser.parse_args(argv)
    if args.instructions and shutil.which("valgrind") is None:
        parser.error("--instructions needs valgrind on PATH (Debian: apt install valgrind)")
    with tempfile.TemporaryDirectory() as scratch:
        measure(
            resolve(args.source),
            args.repeat,
            args.instructions,
            args.te_fixes,
            Path(scratch),
            args.against,
        )


if __name__ == "__main__":
    main()
