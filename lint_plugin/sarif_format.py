"""`flake8 --format=sarif` (the `flake8.report` entry point), writing the log `sarif` builds.

flake8 imports every registered plugin in every run, whatever format it was asked for, so this
module holds the formatter alone: the builder and its rule texts load when the format is chosen
(`after_init`), not in each commit's flake8 run.
"""

from __future__ import annotations

import json

from flake8.formatting.base import BaseFormatter
from flake8.violation import Violation


class SarifFormatter(BaseFormatter):
    """Every violation of the run, written as one SARIF log at the end."""

    def after_init(self) -> None:
        from lint_plugin import sarif

        self.sarif = sarif
        self.results: list[sarif.Result] = []

    def handle(self, error: Violation) -> None:
        self.results.append(
            self.sarif.Result(
                error.code, error.text, error.filename, error.line_number, error.column_number
            )
        )

    def format(self, error: Violation) -> str | None:  # handle() collects instead
        return None

    def show_statistics(self, statistics) -> None:  # statistics would corrupt the JSON
        return None

    def stop(self) -> None:
        self._write(json.dumps(self.sarif.sarif_log(self.results), indent=2))
        super().stop()
