"""TE's files compiled once per text, not once per load.

A session loads the same release many times: a fuzzer loads its selector for every rewrite,
and every load imports the same helper modules of the tree, each a compile of a file of up to
3,600 lines. Code objects are never changed once made, so each text is compiled once per
process and shared; the files are still read on every load, so an edited file is compiled anew.
"""

from __future__ import annotations

import functools
import types


@functools.lru_cache(maxsize=256)
def compiled(text: str, filename: str) -> types.CodeType:
    """The module code of `text`, compiled as the file `filename`."""
    return compile(text, filename, "exec")
