"""A hazard's guard as Python source, in the selector's own names and TE's own idiom.

TE writes a filter as: the backend flag and the conditions in one `if`, the reason logged at
debug level only when the package is installed (so users without it see no noise), then the
flag set False. A defect that a later kernel release fixed is tested on the installed version
the way TE compares versions (`FlashAttentionUtils.fa4_version < PkgVersion("4.0.0b36")`), so
the guard keeps the backend where the release accepts the call. The text is laid out exactly as
black (line length 100, TE's setting) would lay it out, so that a selector that passed `black
--check` still does after the codemod.

The backward signal (`lint_plugin.engine.anchors.backward_signal`) is the `requires_backward`
field, its read in the selector and the import they need; or, for a selector that takes keyword
inputs, one local asking autograd.
"""

from __future__ import annotations

import json

from lint_plugin.engine.dialect import BACKWARD_FIELD, CAPTURE_FIELD, CAPTURE_QUERY, Dialect
from selector_patch.registry import SM80_ON, Hazard

LINE_LENGTH = 100
INDENT = "    "


def architecture_source(architectures: tuple[tuple[int, int], ...]) -> str:
    """The architecture test; a hazard of every architecture from one on (a cuDNN defect of
    all of sm80+) is tested as TE tests it, `>= (8, 0)`."""
    if len(architectures) == 1:
        return f"device_compute_capability == {architectures[0]!r}"
    lowest = min(architectures)
    if len(architectures) > 2 and set(architectures) == {a for a in SM80_ON if a >= lowest}:
        return f"device_compute_capability >= {lowest!r}"
    return f"device_compute_capability in {tuple(architectures)!r}"


class RenderError(Exception):
    """The guard cannot be written in this module's names; the message says why."""


def version_source(hazard: Hazard, dialect: Dialect) -> str | None:
    """`<installed version> < Version("<fixed release>")`, for a defect a release fixed."""
    fixed_in = hazard.evidence.fixed_in
    if fixed_in is None:
        return None
    installed = dialect.version(hazard.backend)
    constructor = next(
        (n for n, q in dialect.pure_imports.items() if q == "packaging.version.Version"), None
    )
    if installed is None or constructor is None:
        raise RenderError(
            f"{hazard.id} holds only below {hazard.evidence.package} {fixed_in}, and the module"
            " has no installed version or packaging `Version` to test that with"
        )
    return f"{installed} < {constructor}({json.dumps(fixed_in)})"


def guard_operands(hazard: Hazard, dialect: Dialect) -> list[str]:
    """The `and`-ed operands of the guard's test, flag first, duplicates dropped."""
    operands = [dialect.flag(hazard.backend)]
    # A condition on an input the selector does not take (TE before 1.9 has no `is_training`)
    # is left out: the guard then also fires without it, which is safe.
    operands += [
        operand
        for condition in hazard.triggers
        if dialect.asks(condition)
        for operand in dialect.condition_operands(condition)
    ]
    operands.append(version_source(hazard, dialect))
    operands.append(architecture_source(hazard.architectures))
    return list(dict.fromkeys(operand for operand in operands if operand is not None))


def _if_header(operands: list[str], indent: str) -> list[str]:
    """`if a and b:` in the first of black's three layouts that fits."""
    test = " and ".join(operands)
    if len(f"{indent}if {test}:") <= LINE_LENGTH:
        return [f"{indent}if {test}:"]
    inner = indent + INDENT
    if len(inner + test) <= LINE_LENGTH:
        return [f"{indent}if (", inner + test, f"{indent}):"]
    conjuncts = [inner + operands[0], *(f"{inner}and {operand}" for operand in operands[1:])]
    return [f"{indent}if (", *conjuncts, f"{indent}):"]


def _string_chunks(message: str, width: int) -> list[str]:
    """Split `message` at spaces into double-quoted literals no wider than `width`."""
    chunks, current = [], ""
    for word in message.split(" "):
        candidate = f"{current} {word}" if current else word
        if current and len(json.dumps(candidate)) > width:
            chunks.append(current)
            candidate = " " + word  # TE starts continuation literals with the space
        current = candidate
    chunks.append(current)
    return [json.dumps(chunk) for chunk in chunks]


def _debug_call(message: str, indent: str) -> list[str]:
    """`logger.debug("...")`, wrapped into implicitly concatenated literals when too long."""
    literal = json.dumps(message)
    if len(f"{indent}logger.debug({literal})") <= LINE_LENGTH:
        return [f"{indent}logger.debug({literal})"]
    inner = indent + INDENT
    chunks = _string_chunks(message, LINE_LENGTH - len(inner))
    return [f"{indent}logger.debug(", *(inner + chunk for chunk in chunks), f"{indent})"]


def render_guard(hazard: Hazard, dialect: Dialect, indent: str = INDENT) -> str:
    """The guard statement for `hazard`, indented for a statement at `indent`."""
    flag = dialect.flag(hazard.backend)
    body = indent + INDENT
    lines = _if_header(guard_operands(hazard, dialect), indent)
    installed = dialect.installed(hazard.backend)
    if installed is not None:
        lines.append(f"{body}if {installed}:")
        lines += _debug_call(hazard.message, body + INDENT)
    else:
        lines += _debug_call(hazard.message, body)
    lines.append(f"{body}{flag} = False")
    return "\n".join(lines) + "\n"


def backward_field_source(field_function: str, indent: str = INDENT) -> str:
    """The `AttentionParams` field whose default is autograd's state at construction."""
    return (
        f"{indent}# Whether a backward will run: autograd's state when the params are built; a"
        f" field,\n{indent}# so the backend cache never reuses a forward-only selection for it.\n"
        f"{indent}{BACKWARD_FIELD}: bool = {field_function}(default_factory=torch.is_grad_enabled)\n"
    )


def capture_field_source(field_function: str, indent: str = INDENT) -> str:
    """The `AttentionParams` field TE 2.10 added, whose default is TE's own capture state at
    construction (asked when called: `te.pytorch` is still importing when the module is)."""
    head = f"{indent}{CAPTURE_FIELD}: bool = {field_function}("
    factory = f"default_factory=lambda: {CAPTURE_QUERY}()"
    line = f"{head}{factory})"
    laid_out = line if len(line) <= LINE_LENGTH else f"{head}\n{indent}{INDENT}{factory}\n{indent})"
    return (
        f"{indent}# Whether the call runs under CUDA graph capture: TE's state when the params are"
        f"\n{indent}# built; a field, so the backend cache never reuses a selection made outside"
        f" it.\n{laid_out}\n"
    )


def backward_query_source(indent: str = INDENT) -> str:
    """For a selector that takes keyword inputs: autograd's state, asked as it selects."""
    return f"{indent}{BACKWARD_FIELD} = torch.is_grad_enabled()\n"


def signal_read_source(field: str, parameter: str, indent: str = INDENT) -> str:
    """The selector's local, read like its neighbours (`is_training = params.is_training`)."""
    return f"{indent}{field} = {parameter}.{field}\n"
