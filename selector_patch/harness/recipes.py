"""The FP8 recipe of a scenario's autocast, built from the release's own recipe module.

`DotProductAttention` hands the selector `fp8=self.fp8` and `fp8_meta=self.fp8_meta`, whose
`"recipe"` is the recipe object of the enclosing `autocast` (`DelayedScaling(fp8_dpa=True)`,
...); the selector calls its methods (`delayed()`, `mxfp8()`, ...) and reads its options. The
object is built from the release's `transformer_engine.common.recipe`, run from the tree's source
by the selector's private import table (`imports.EXECUTED_MODULES`), so each release's recipe
classes, options and defaults are its own. That module decorates with pydantic's `dataclass`,
which validates on top of the standard library's; `PYDANTIC_DATACLASSES` serves the latter.
"""

from __future__ import annotations

import dataclasses
import types
from typing import Any, Mapping

RECIPE_MODULE = "transformer_engine.common.recipe"

#: `pydantic.dataclasses` for the recipe module: the standard `dataclass` (pydantic is no
#: dependency; its validation changes no value a scenario builds).
PYDANTIC_DATACLASSES = types.ModuleType("pydantic.dataclasses")
PYDANTIC_DATACLASSES.dataclass = dataclasses.dataclass


class NoRecipe(Exception):
    """The release cannot build the asked-for recipe; `str()` says why."""


def fp8_meta(namespace: Mapping[str, Any], recipe: str, options: Mapping[str, Any]) -> dict:
    """`DotProductAttention.fp8_meta` under an autocast with `recipe(**options)`."""
    module = namespace["__builtins__"]["__import__"](RECIPE_MODULE, namespace, None, ("*",), 0)
    if not isinstance(module, types.ModuleType) or module.__dict__.get("__file__") is None:
        raise NoRecipe(f"no source of {RECIPE_MODULE} beside the selector to build {recipe} from")
    recipe_class = module.__dict__.get(recipe)
    if not isinstance(recipe_class, type):
        raise NoRecipe(f"{RECIPE_MODULE} of this release defines no {recipe} recipe")
    try:
        built = recipe_class(**options)
    except TypeError as error:
        raise NoRecipe(f"{recipe}({', '.join(options)}): {error}") from None
    return {"recipe": built}
