"""TE's files parsed and compiled once per text, not once per load.

A session loads the same release many times: a fuzzer loads its selector for every rewrite,
and every load imports the same helper modules of the tree and reads the same kernel wiring
(`wiring`), each a parse and a compile of a file of up to 3,600 lines. Trees and code objects
are never changed once made, so each text is parsed and compiled once per process and shared;
the files are still read on every load, so an edited file is compiled anew.
"""

from __future__ import annotations

import ast
import functools
import types


@functools.lru_cache(maxsize=16)
def parsed(text: str, filename: str) -> ast.Module:
    """`ast.parse(text, filename)`, shared: nobody may change the tree. Few are kept (TE 2.20.2's
    selector module's tree is some 5 MB)."""
    return ast.parse(text, filename)


@functools.lru_cache(maxsize=256)
def compiled(text: str, filename: str) -> types.CodeType:
    """The module code of `text`, compiled as the file `filename`."""
    return compile(text, filename, "exec")
