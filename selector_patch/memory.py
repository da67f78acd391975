"""The memory one command may take: a budget the kernel enforces, not one hoped for.

A selector is fork code, and what it makes the harness do is unbounded in principle: its own
loops, a loop over what a module the virtual device does not load returns, a grid its
comparisons cut fine. Left alone, Python grows its heap until the OOM killer takes the process,
and whatever else runs on the machine with it. So each command that runs selectors runs under a
budget: its address space may grow by at most `TE_ATTN_GUARDS_MEMORY_MB` MiB (default
`DEFAULT_MB`) beyond what the process held when the command began, set as the soft
`RLIMIT_AS`. Resident memory never exceeds the address space, so this bounds the command's peak
memory too. Past the budget an allocation fails with `MemoryError` where it is made; `budget`
turns that into a `BudgetExceeded` of one line, which the command prints before it exits 2.
The limit is put back when the command returns: tests run commands in the test process.
"""

from __future__ import annotations

import contextlib
import os
import resource
from typing import Iterator, Mapping

VARIABLE = "TE_ATTN_GUARDS_MEMORY_MB"
#: `snapshot` and `diff` of TE 2.20.2 grow by about 650 MiB of address space (300 MB resident),
#: of which importing torch is 600: a budget below that fails at the import.
DEFAULT_MB = 2048
_MIB = 1 << 20


class BudgetExceeded(Exception):
    """A command ran past its memory budget, or the budget is misconfigured; one line."""


def configured_mb(env: Mapping[str, str] = os.environ) -> int:
    """The budget in MiB: `TE_ATTN_GUARDS_MEMORY_MB` (a positive integer), else `DEFAULT_MB`."""
    value = env.get(VARIABLE)
    if value is None:
        return DEFAULT_MB
    try:
        mb = int(value)
    except ValueError:
        mb = 0
    if mb <= 0:
        raise BudgetExceeded(f"{VARIABLE}={value!r}: not a positive number of MiB")
    return mb


def address_space() -> int | None:
    """The process's address space in bytes, where the kernel says (Linux `/proc`)."""
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            pages = int(statm.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return pages * resource.getpagesize()


@contextlib.contextmanager
def budget(what: str, env: Mapping[str, str] = os.environ) -> Iterator[int]:
    """Run the block with its growth limited to the configured budget (yielded, in MiB);
    `what` names the command in the one line a `BudgetExceeded` says."""
    mb = configured_mb(env)
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    held = address_space()
    limit = None if held is None else held + mb * _MIB
    if limit is not None and hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    enforced = limit is not None and (soft == resource.RLIM_INFINITY or limit < soft)
    if enforced:
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    try:
        yield mb
    except MemoryError:
        raise BudgetExceeded(
            f"{what}: ran past its memory budget of {mb} MiB ({VARIABLE} sets it)"
        ) from None
    finally:
        if enforced:
            resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
