"""`flake8 --format=sarif` (the `flake8.report` entry point), writing the log `sarif` builds.

flake8 imports every registered plugin in every run, whatever format it was asked for, so this
module holds the formatter alone: the builder and its rule texts load when the log is written
(`stop`), not in each commit's flake8 run.
"""

from __future__ import annotations

import json

from flake8.formatting.base import BaseFormatter
from flake8.violation import Violation


class SarifFormatter(BaseFormatter):
    """Every violation of the run, written as one SARIF log at the end."""

    def after_init(self) -> None:
        self.violations: list[Violation] = []

    def handle(self, error: Violation) -> None:
        self.violations.append(error)

    def format(self, error: Violation) -> str | None:  # handle() collects instead
        return None

    def show_statistics(self, statistics) -> None:  # statistics would corrupt the JSON
        return None

    def stop(self) -> None:
        from lint_plugin.sarif import Result, sarif_log

        results = (
            Result(v.code, v.text, v.filename, v.line_number, v.column_number)
            for v in self.violations
        )
        self._write(json.dumps(sarif_log(results), indent=2))
        super().stop()
