"""The miner's CuTe side: flash-attn-4's Python sources, read with `ast`.

`kernel` finds the sources (a released wheel in the cache, or a directory), `extract` the
architecture-conditioned `assert`s and `raise`s in each module, `reach` which parameters TE's
calls fix, `switches` what the kernel's environment helpers return with nothing set,
`features` says which kernel variables carry which selector feature, and `cases` states each
refusal in selector inputs, or why it is unreachable through TE or kernel-internal.
`mine` runs them over every module.
"""

from __future__ import annotations

from typing import Sequence

from lint_plugin.mine.cute.cases import cases
from lint_plugin.mine.cute.extract import refusals
from lint_plugin.mine.cute.kernel import KernelSource, parse
from lint_plugin.mine.cute.switches import switches
from lint_plugin.mine.findings import Case
from lint_plugin.mine.te_calls import KernelCall
from selector_patch.sources import SourceError, read_text


def mine(kernel: KernelSource, calls: Sequence[KernelCall] = ()) -> list[Case]:
    """Every case of every architecture-conditioned refusal in the kernel's sources, asked
    through TE's `calls` into the kernel (none: every parameter is free, no module entered);
    through them, the kernel's environment switches hold their unset values (`switches`)."""
    texts = {path: read_text(path) for path in kernel.files()}
    modules = {}
    for path, text in texts.items():
        try:
            modules[path] = parse(text)
        except SyntaxError as error:
            raise SourceError(path, f"syntax error at line {error.lineno}: {error.msg}") from None
    helpers = switches(modules.values()) if calls else {}
    found = []
    for path, text in texts.items():
        extracted = refusals(text, kernel.relative(path), calls, helpers)
        found += [case for refusal in extracted for case in cases(refusal, kernel.version)]
    return found
