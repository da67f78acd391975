"""TE's FP8 recipe state as the analysis binds it: what a witness's `fp8` / `fp8_meta` hold.

`DotProductAttention` hands the selector `fp8` (whether an FP8 autocast is on) and `fp8_meta`,
a dict whose `"recipe"` is the autocast's recipe object. Every release 1.9 - 2.20.2 reads them
the same way: `fp8 and fp8_meta["recipe"].fp8_dpa` (FP8 attention), `.fp8_mha`, and from 2.8 on
the recipe's own class predicates, `fp8_recipe.float8_current_scaling()`, `.delayed()`, ...,
after `fp8_meta.get("local_recipes", None)`. A witness binds `fp8_meta` to a `Meta` holding a
`Recipe` of the scenario's class and options, and the interpreter folds exactly those reads and
calls on them (`attribute`, `call`): anything else read off them stays unknown.

A recipe's class predicate exists only where the release's recipe module defines it
(`PREDICATES`, read off `transformer_engine/common/recipe` of each release): a guard on a
recipe class can be written only there.
"""

from __future__ import annotations

from typing import Any

from selector_patch.records import TupleRecord
from selector_patch.scenario import Scenario


class Predicate(TupleRecord):
    """A recipe class's predicate method, and the first release whose recipes define it."""

    method: str
    since: str


#: Recipe class -> the predicate TE asks it with (`Recipe.float8_current_scaling()` is
#: `issubclass(cls, Float8CurrentScaling)`), as the releases' recipe modules define them.
PREDICATES = {
    "DelayedScaling": Predicate("delayed", "2.1.0"),
    "MXFP8BlockScaling": Predicate("mxfp8", "2.1.0"),
    "Float8CurrentScaling": Predicate("float8_current_scaling", "2.2.0"),
    "Float8BlockScaling": Predicate("float8_block_scaling", "2.3.0"),
    "NVFP4BlockScaling": Predicate("nvfp4", "2.8.0"),
    "CustomRecipe": Predicate("custom", "2.9.0"),
}
#: The recipe options the selector reads as attributes (`Scenario` fields of the same name).
OPTIONS = ("fp8_dpa", "fp8_mha")
#: Every method name `call` folds: the predicates, and the dict's `get`.
METHODS = frozenset({"get", *(predicate.method for predicate in PREDICATES.values())})


class Recipe(TupleRecord):
    """The autocast's recipe: its class by name and its options."""

    name: str
    fp8_dpa: bool
    fp8_mha: bool

    def predicate(self, method: str) -> bool:
        """`recipe.<method>()`: whether the recipe is of that predicate's class."""
        classes = [name for name, predicate in PREDICATES.items() if predicate.method == method]
        if not classes:
            raise AttributeError(method)
        return self.name in classes


class Meta:
    """`fp8_meta`: a dict holding the recipe (none outside an FP8 autocast), and no
    `local_recipes` (only a custom recipe's per-tensor ones set it, which no witness has).
    Read as TE reads it: `fp8_meta["recipe"]`, `fp8_meta.get(key, default)`."""

    __slots__ = ("recipe",)

    def __init__(self, recipe: Recipe | None) -> None:
        self.recipe = recipe

    def __getitem__(self, key: str) -> Recipe:
        if key != "recipe" or self.recipe is None:
            raise KeyError(key)
        return self.recipe

    def get(self, key: str, default: Any = None) -> Any:
        return self.recipe if key == "recipe" and self.recipe is not None else default

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Meta) and other.recipe == self.recipe

    def __hash__(self) -> int:
        return hash((Meta, self.recipe))

    def __repr__(self) -> str:
        return f"<fp8_meta {self.recipe!r}>"


def bound(scenario: Scenario) -> dict[str, Any]:
    """The `fp8` and `fp8_meta` fields of `scenario`'s call."""
    recipe = scenario.fp8_recipe
    if recipe is None:
        return {"fp8": False, "fp8_meta": Meta(None)}
    return {"fp8": True, "fp8_meta": Meta(Recipe(recipe, scenario.fp8_dpa, scenario.fp8_mha))}


def attribute(obj: Any, name: str) -> Any:
    """`obj.name` of a bound recipe (its options); raises for anything else."""
    if isinstance(obj, Recipe) and name in OPTIONS:
        return getattr(obj, name)
    raise AttributeError(name)


def call(obj: Any, method: str, *arguments: Any) -> Any:
    """`obj.method(*arguments)` of a bound recipe or `fp8_meta`; raises for anything else."""
    if isinstance(obj, Recipe) and not arguments:
        return obj.predicate(method)
    if isinstance(obj, Meta) and method == "get":
        return obj.get(*arguments)
    raise AttributeError(method)
