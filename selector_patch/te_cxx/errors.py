"""The one error of running TE's C++: it cannot be found, compiled or called as TE's query."""


class CxxError(Exception):
    """TE's C++ cannot be run; `str()` is one line, `"<file>: <cause>"`."""

    def __init__(self, where: object, cause: str) -> None:
        super().__init__(f"{where}: {cause}")
