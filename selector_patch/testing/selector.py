"""The selector under test, asked in keyword inputs, and what it chose, worded for assertions.

`SelectorUnderTest` wraps the harness's `LoadedSelector` (kept as `.loaded` for tests of the
harness itself) with `select(**inputs)`, the vocabulary of `inputs.request_of`. A request the
release cannot express (MLA head dims on TE 1.9, split-KV on a release without `num_splits`)
skips the test, saying why, the way `pytest.importorskip` skips what the machine lacks; an input
that names nothing is a `TypeError`; a selector whose own code raises fails the test with the
harness's one line (file, line, cause). `BackendChoice` is the answer: backend,
role, version, the backends TE reported available, TE's own log lines, and the request.

Importing this module imports neither torch nor TE; loading a selector does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping

import pytest

from selector_patch.scenario import Scenario
from selector_patch.testing.inputs import describe, keyword_inputs, request_of

if TYPE_CHECKING:
    from selector_patch.harness import LoadedSelector, Selection
    from selector_patch.sources import SelectorSource


def release_name(te_version: str | None) -> str:
    """`TE 2.20.2`, or what a checkout without a recorded version is called."""
    return f"TE {te_version}" if te_version else "TE (version unknown)"


@dataclass(frozen=True, repr=False)
class BackendChoice:
    """What TE's selector chose for one request."""

    selection: "Selection"
    #: The request as a scenario, and the further `AttentionParams` fields it set.
    request: Scenario
    params: Mapping[str, Any]
    te_version: str | None
    #: "fused answer assumed: ... (no TE C++ for ...)", or None where TE's C++ answered.
    fused_assumption: str | None = None

    @property
    def backend(self) -> str:
        """ "FlashAttention", "FusedAttention", "UnfusedDotProductAttention" or "NoBackend"."""
        return self.selection.backend

    @property
    def role(self) -> str | None:
        """The backend by role: "FA2", "FA3", "FA4", "FUSED", "UNFUSED"; None for NoBackend."""
        return self.selection.role

    @property
    def version(self) -> str | None:
        """The flash-attn version TE dispatches to, when the backend is FlashAttention."""
        return self.selection.flash_version

    @property
    def available(self) -> tuple[str, ...]:
        """The backends TE reported available, by TE's names, in TE's order (a fork's own by
        their place in its `available_backends`)."""
        from selector_patch.harness.returns import FLASH, FUSED, UNFUSED
        from selector_patch.harness.selection import BACKENDS

        flags = self.selection.available
        names = [BACKENDS[flag][0] for flag in (FLASH, FUSED, UNFUSED)]
        names += [f"available_backends[{index}]" for index in range(len(names), len(flags))]
        return tuple(name for name, on in zip(names, flags) if on)

    @property
    def log(self) -> tuple[str, ...]:
        """TE's own debug and warning lines for this call, as TE prints them."""
        return self.selection.log

    def chosen(self) -> str:
        """`FlashAttention (FA4 4.0.0b24)`, `FusedAttention`, `NoBackend`."""
        if self.version is None:
            return self.backend
        return f"{self.backend} ({self.role} {self.version})"

    def __repr__(self) -> str:
        return (
            f"BackendChoice(backend={self.backend!r}, role={self.role!r}, "
            f"version={self.version!r}, available={self.available!r})"
        )

    def __str__(self) -> str:
        """The whole story, for failure messages: what was asked, chosen, and TE's reasons."""
        inputs = {**keyword_inputs(self.request), **self.params}
        lines = [
            f"{release_name(self.te_version)} on {self.request.sm} chose "
            f"{self.chosen()}; available: {', '.join(self.available) or 'none'}",
            f"request: {describe(inputs) or '(the defaults)'}",
            *([self.fused_assumption] if self.fused_assumption else []),
            "TE's log for this call:",
            *(f"  {line}" for line in self.log),
        ]
        return "\n".join(lines)


class SelectorUnderTest:
    """A TE selector loaded on the virtual device (CPU only), asked in its users' words."""

    def __init__(self, loaded: "LoadedSelector") -> None:
        #: The harness's loaded selector module.
        self.loaded = loaded

    @property
    def source(self) -> "SelectorSource":
        return self.loaded.source

    @property
    def te_version(self) -> str | None:
        return self.loaded.te_version

    @property
    def params_fields(self) -> tuple[str, ...]:
        """The fields of this release's `AttentionParams`."""
        return self.loaded.params_fields

    @property
    def fused_assumption(self) -> str | None:
        """What cuDNN's fused answer is assumed to be where TE's C++ is not at hand; None where
        TE's own C++ answers."""
        return self.loaded.fused_assumption

    def select(self, request: Scenario | None = None, /, **inputs: Any) -> BackendChoice:
        """Run TE's `get_attention_backend` for `inputs` (changes to `request`, if given).

        For example `te_selector.select(compute_capability=(12, 0), NVTE_FUSED_ATTN="0")`.
        """
        __tracebackhide__ = True  # a skip or an error is reported at the test's line
        from selector_patch.harness import LoadError, Unrepresentable

        scenario, params = request_of(
            inputs,
            self.params_fields,
            request or Scenario(),
            where=f"select() on {release_name(self.te_version)}",
        )
        try:
            selection = self.loaded.select(scenario, params)
        except Unrepresentable as error:
            pytest.skip(f"{release_name(self.te_version)} cannot express this request: {error}")
        except LoadError as error:  # the selector's own code raised: its file, line and cause
            cause = str(error)
        else:
            return BackendChoice(
                selection, scenario, params, self.te_version, self.loaded.assumption_of(selection)
            )
        pytest.fail(cause, pytrace=False)

    def __repr__(self) -> str:
        return f"<SelectorUnderTest {release_name(self.te_version)} {self.loaded.path}>"
