"""`python -m selector_patch.te_lib.record [-o FILE]`: cuDNN's real verdicts, on a GPU machine.

Run where TE 2.20+ is installed and a GPU is present. It loads the installed TE's selector in
the harness with the installed `libtransformer_engine.so` as its fused query, over the machine's
own CUDA and cuDNN (no stubs), asks every hazard's witnesses and controls (what `verify` and
`table` ask) on this GPU's compute capability and this cuDNN, and writes every answer of TE's
query, cuDNN's support check included, as the file `verdicts` reads (default
`cudnn-verdicts-<version>-sm<arch>-<cudnn>.json`). Elsewhere,
`TE_ATTN_GUARDS_CUDNN_VERDICTS=FILE` makes those answers replace the assumption. Exit status 0,
or 2 with one line (no GPU, no TE 2.20+ installed, no harness extra).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from selector_patch.extras import exit_without_harness

COMMAND = "python -m selector_patch.te_lib.record"
LIBRARIES = (
    "transformer_engine/wheel_lib/libtransformer_engine.so",
    "transformer_engine/libtransformer_engine.so",
)


def cudnn_tuple(version: int) -> tuple[int, int, int]:
    """`cudnnGetVersion()`'s number as the harness's (major, minor, patch): 91801 is 9.18.1."""
    major, rest = divmod(version, 10000) if version >= 90000 else divmod(version, 1000)
    return major, rest // 100, rest % 100


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=COMMAND, description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", metavar="FILE", help="where to write the verdicts")
    args = parser.parse_args(argv)
    exit_without_harness(COMMAND)
    import torch

    from selector_patch.harness import LoadError, Unrepresentable
    from selector_patch.harness.loader import LoadedSelector
    from selector_patch.registry import HAZARDS
    from selector_patch.sources import SourceError, resolve
    from selector_patch.te_cxx import CxxError
    from selector_patch.te_lib import verdicts
    from selector_patch.te_lib.client import LibraryQuery

    try:
        if not torch.cuda.is_available():
            raise SourceError("torch.cuda", "no GPU (torch.cuda.is_available() is False)")
        source = resolve("installed")
        library = next((source.root / p for p in LIBRARIES if (source.root / p).is_file()), None)
        if library is None:
            raise SourceError(source.root, "the installed TE holds no libtransformer_engine.so")
        query = LibraryQuery(
            source.root,
            library,
            configured=True,
            version=source.te_version,
            stubbed=False,
            recording=True,
        )
        selector = LoadedSelector(source, source.path.read_text(encoding="utf-8"), query=query)
    except (SourceError, LoadError, CxxError) as error:
        print(f"{COMMAND}: {error}", file=sys.stderr)
        return 2
    capability = torch.cuda.get_device_capability()
    cudnn = cudnn_tuple(torch.backends.cudnn.version())
    machine = {"compute_capability": capability, "cudnn_version": cudnn}
    for hazard in HAZARDS:
        for witness in hazard.witnesses():
            scenarios = [witness, *(s for _, s in hazard.control_scenarios(witness))]
            for scenario in scenarios:
                try:
                    selector.select(scenario.with_changes(machine))
                except (Unrepresentable, LoadError):
                    continue  # what this release cannot express, or TE's own query refused
    arch = f"sm{capability[0]}{capability[1]}"
    output = Path(
        args.output or f"cudnn-verdicts-{source.te_version}-{arch}-{'.'.join(map(str, cudnn))}.json"
    )
    verdicts.write(output, source.te_version, query.recorded)
    print(f"{output}: {len(query.recorded)} answers of TE {source.te_version} on {arch}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
