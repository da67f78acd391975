"""The FP8 recipe of a scenario's autocast, built from the release's own recipe module, and the
FP8 dtype TE derives from it.

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
    except (TypeError, ValueError, AssertionError) as error:
        # An option it does not take, or one its own checks refuse (TE 2.4 - 2.7:
        # "FP8 attention is not supported for Float8CurrentScaling."): not expressible there.
        raise NoRecipe(f"{recipe}({', '.join(options)}): {error}") from None
    return {"recipe": built}


def fp8_te_dtype(dtypes: Any, fp8_recipe: Any, fprop_tensor: bool = True) -> Any:
    """TE's `get_fp8_te_dtype` (in `fp8.py`, later `quantization.py`), over the extension's
    `DType`: E4M3 for an E4M3 recipe and for a HYBRID recipe's forward tensors, else E5M2. The
    selector passes its result to cuDNN's fused-attention query as the FP8 tensors' dtype."""
    name = fp8_recipe.fp8_format.name
    if name == "E4M3" or (name == "HYBRID" and fprop_tensor):
        return dtypes.kFloat8E4M3
    return dtypes.kFloat8E5M2
