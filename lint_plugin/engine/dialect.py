"""Which names a given selector binds for each backend role and each hazard input.

TE renamed things across releases (see `selector_patch.roles`); forks rename more. Analysis and
codemod both ask this module, never hard-code a spelling: a role resolves to the first of its
candidate flag names that the selector function assigns. The selector's inputs are the fields of
its `AttentionParams` argument; their dataclass defaults are read from the module, so the
analyzer can tell a filter for an optional feature (softcap, FP8, KV cache) from one that fires
in a plain call.

"A backward will run" is what autograd knows while the selector runs: the `requires_backward`
field where `AttentionParams` has one (TE upstream, or what the codemod adds), or a
`torch.is_grad_enabled()` the selector asks itself. `is_training` is not that signal (a module
in `.eval()` still runs a backward when autograd records it), so a selector with neither cannot
tell a backward from a forward at all.
"""

from __future__ import annotations

import ast
import contextlib
from functools import cached_property
from types import MappingProxyType
from typing import Any, Container, Mapping

from lint_plugin.engine.absint import Value, const
from lint_plugin.engine.interpret.folding import PURE_BUILTINS
from lint_plugin.engine.module_scan import ModuleScan
from lint_plugin.engine.predicates import Predicate, module_predicates
from lint_plugin.engine.pure_functions import pure_functions
from lint_plugin.engine import recipes
from lint_plugin.engine.program import (
    descendants,
    function_index,
    selector_inputs,
    selector_parameter,
)
from selector_patch import versions
from selector_patch.config import DEFAULT_SELECTOR_FUNCTIONS
from selector_patch.roles import ROLES
from selector_patch.scenario import (
    BHSS_FIELDS,
    KV_TILE_REMAINDER,
    DTYPE_INPUTS,
    FEATURE_FIELDS,
    HELD_AS_IS,
    INPUTS,
    OPTIONAL_FEATURES,
    Condition,
    Scenario,
)

#: Default names of the functions that select a backend (`selector-functions` in the config).
SELECTOR_FUNCTIONS = DEFAULT_SELECTOR_FUNCTIONS
#: TE's hardware query whose answer is the device's (major, minor) compute capability.
COMPUTE_CAPABILITY_QUERY = "get_device_compute_capability"
#: TE's query of the loaded cuDNN's (major, minor, patch): a witness's `cudnn_version`.
CUDNN_VERSION_QUERY = "get_cudnn_version"
#: The `AttentionParams` dataclass, where the selector's argument carries no annotation.
PARAMS_CLASS = "AttentionParams"
#: The field that says a backward will run, and the local TE binds it to.
BACKWARD_FIELD = "requires_backward"
#: torch's query of the autograd state, for a selector that asks it directly.
GRAD_MODE_QUERY = "is_grad_enabled"
#: The field that says the call runs under CUDA graph capture (TE 2.10 on), and its local.
CAPTURE_FIELD = "cuda_graph"
#: How a module that imports `transformer_engine as te` asks TE's own capture state.
CAPTURE_QUERY = "te.pytorch.graph.is_graph_capturing"
#: Functions a module may import that are pure on constant arguments, by qualified name.
PURE_IMPORTS = {f"packaging.version.{name}": versions.pkg_version for name in ("Version", "parse")}
#: Literal values a module constant may hold: immutable all the way down.
IMMUTABLE_LITERALS = (str, bytes, int, float, complex, bool, type(None))
#: Not looked up yet (a role's answer may be None).
_UNSET = object()
#: Optional features and the `AttentionParams` fields that carry them (a KV cache is
#: `inference_params`): the plain call keeps each at its dataclass default.
OPTIONAL_FIELDS = frozenset(OPTIONAL_FEATURES).union(*FEATURE_FIELDS.values())
#: Trigger inputs derived from both head dims.
HEAD_DIM_INPUTS = ("padded_head_dim", "mla")
#: Trigger inputs of the FP8 recipe state, read off `fp8` and `fp8_meta` (`recipes`).
RECIPE_INPUTS = ("fp8_recipe", *recipes.OPTIONS)


class KVCache:
    """What a witness with a KV cache binds `inference_params` to: an object, so `is None` is
    decided, whose attributes (page size, ...) the analysis leaves unknown."""

    def __repr__(self) -> str:
        return "<KV cache>"


KV_CACHE = KVCache()


def find_selectors(tree: ast.Module, names=SELECTOR_FUNCTIONS) -> list[ast.FunctionDef]:
    """Top-level (or class-level) functions named like a selector, in source order."""
    found = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name in names:
            found.append(node)
        elif isinstance(node, ast.ClassDef):
            found.extend(find_selectors(ast.Module(body=node.body, type_ignores=[]), names))
    return found


def literal(value: Any) -> str:
    """A Python literal as black writes it: strings double-quoted, in tuples too."""
    if isinstance(value, str):
        import json  # only a guard's or a test's text needs it

        return json.dumps(value)
    if isinstance(value, tuple):
        items = [literal(item) for item in value]
        return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"
    return repr(value)


#: torch's dtype attributes selectors compare dtypes with -> the dtype's own name, the one a
#: scenario holds (`str(torch.half)` is `torch.float16`).
TORCH_DTYPES = {
    **{name: name for name in ("float16", "bfloat16", "float32", "float8_e4m3fn", "float8_e5m2")},
    "half": "float16",
    "float": "float32",
}
#: What a run reads each of them as (shared by every selector, so read-only).
TORCH_DTYPE_VALUES: Mapping[str, Value] = MappingProxyType(
    {f"torch.{spelling}": const(name) for spelling, name in TORCH_DTYPES.items()}
)


class Dialect:
    """The names one selector function uses; built once per function."""

    def __init__(self, function: ast.FunctionDef, module: ast.Module) -> None:
        self.function = function
        self.module = module
        #: Per role, what `installed`, `version` and `admitted_versions` found: every witness
        #: run asks them again.
        self._installed: dict[str, str | None] = {}
        self._versions: dict[str, str | None] = {}
        self._admitted: dict[str, tuple[str, str] | None] = {}

    @property
    def bound(self) -> frozenset[str]:
        """Every name the function body binds (its own scope and nested helper scopes)."""
        return function_index(self.function).stores

    @cached_property
    def _scan(self) -> ModuleScan:
        """What the module holds of the names `module_text_names` and `module_names` ask about
        (`module_scan`)."""
        return ModuleScan(self.module, self.function)

    @property
    def module_text_names(self) -> Container[str]:
        """Names and dotted names used anywhere in the module (`FlashAttentionUtils.is_installed`,
        ...): `in` asks."""
        return self._scan

    def flag(self, role: str) -> str | None:
        """The selector-local flag of `role`, or None when this selector has no such backend."""
        for name in ROLES[role].flags:
            if name in self.bound:
                # `use_flash_attention` is FA2's flag only where no numbered FA2 flag exists.
                return name
        return None

    @property
    def function_text_names(self) -> frozenset[str]:
        """Dotted names used in the selector function (most lookups end here, cheaply)."""
        return function_index(self.function).text_names

    def installed(self, role: str) -> str | None:
        """The expression TE uses for "this role's package is installed", if any."""
        found = self._installed.get(role, _UNSET)
        if found is _UNSET:
            found = self._installed[role] = self._first_used(ROLES[role].installed)
        return found

    def version(self, role: str) -> str | None:
        """The expression holding the role's installed package version, if any."""
        found = self._versions.get(role, _UNSET)
        if found is _UNSET:
            found = self._versions[role] = self._first_used(ROLES[role].versions)
        return found

    def _first_used(self, candidates: tuple[str, ...]) -> str | None:
        """The first candidate the selector uses, else the first the module uses."""
        for expression in candidates:
            if expression in self.function_text_names:
                return expression
        for expression in candidates:
            if expression in self.module_text_names:
                return expression
        return None

    def admitted_versions(self, role: str) -> tuple[str, str] | None:
        """The package versions TE's import accepts for `role`, as (lowest, highest), both
        included; None where the module states no such bounds.

        TE 1.12 - 2.1 call flash-attn installed only for `_flash_attn_version_required <=
        version <= _flash_attn_max_version`, TE 2.2+ for `FlashAttentionUtils.version_required
        <= version < max_version`: a package outside leaves the role's `installed` flag False
        whatever the selector says (TE 1.9 - 1.11 state the bounds too, but have no such flag,
        and import any version above the minimum). The bounds are the values the module first
        assigns, since the import compares before any selector call rebinds them; a higher
        minimum for some architectures (`version_required_blackwell`) is not read, which only
        widens the span.
        """
        found = self._admitted.get(role, _UNSET)
        if found is _UNSET:
            found = self._admitted[role] = None
            for bounds in ROLES[role].version_bounds:
                lowest, highest = (self._initial_version(expression) for expression in bounds)
                if lowest is not None and highest is not None:
                    found = self._admitted[role] = (lowest, highest)
                    break
        return found

    def _initial_version(self, expression: str) -> str | None:
        """The version a module-level name or a top-level class's attribute is first assigned,
        where it is a pure import's call on a string literal (`PkgVersion("2.6.3")`)."""
        owner, _, name = expression.rpartition(".")
        body = self.module.body
        if owner:
            classes = [node for node in body if isinstance(node, ast.ClassDef)]
            body = next((node.body for node in classes if node.name == owner), [])
        assigned = next(
            (
                node.value
                for node in body
                if isinstance(node, ast.Assign)
                and [getattr(target, "id", None) for target in node.targets] == [name]
            ),
            None,
        )
        if not (
            isinstance(assigned, ast.Call)
            and isinstance(assigned.func, ast.Name)
            and assigned.func.id in self.module_functions
            and len(assigned.args) == 1
            and isinstance(assigned.args[0], ast.Constant)
            and isinstance(assigned.args[0].value, str)
        ):
            return None
        text = assigned.args[0].value
        return text if versions.valid(text) else None

    def compares_version(self, role: str) -> bool:
        """Whether the selector compares the role's installed version (`fa4_version < ...`)."""
        version = self.version(role)
        return version is not None and version in function_index(self.function).compared

    def roles(self) -> dict[str, str]:
        """Every role this selector has, mapped to its flag name."""
        return {role: flag for role in ROLES if (flag := self.flag(role)) is not None}

    @property
    def sees_backward(self) -> bool:
        """Whether the selector can tell a call with a backward from a forward-only one."""
        asked = {GRAD_MODE_QUERY, f"torch.{GRAD_MODE_QUERY}"} & self.function_text_names
        return BACKWARD_FIELD in self.param_fields or bool(asked)

    @property
    def sees_capture(self) -> bool:
        """Whether the selector's params say the call runs under CUDA graph capture."""
        return CAPTURE_FIELD in self.param_fields

    @property
    def can_signal_capture(self) -> bool:
        """Whether the codemod can give the params the capture field: a dataclass to hold it,
        and `te` bound to ask TE's own capture state with."""
        te = self.module_aliases.get("te")
        return self.params_class is not None and te == "transformer_engine"

    @property
    def padded_head_dim(self) -> str:
        """Selector expression for the head dim flash-attn pads to."""
        if "fa2_padded_head_dim" in self.bound:
            return "fa2_padded_head_dim"
        if self.head_dim_fields == ("head_dim",):
            return self.field_expression("head_dim")  # TE 1.9: one head dim for q, k and v
        qk, v = (self.field_expression(field) for field in self.head_dim_fields)
        return f"max({qk}, {v})"

    def field_expression(self, field: str) -> str:
        """How the selector reads an input: the local TE names after the field (`deterministic
        = attention_params.deterministic`), the keyword parameter, or else the field itself."""
        if field in self.bound or field in selector_inputs(self.function) or not self.parameter:
            return field
        return f"{self.parameter}.{field}"

    @property
    def parameter(self) -> str | None:
        argument = selector_parameter(self.function)
        return argument.arg if argument else None

    @cached_property
    def _scalar_inputs(self) -> dict[str, str]:
        """Registry inputs read straight from one `AttentionParams` field (`HELD_AS_IS` and the
        dtypes: the field of the same name; a dtype reads as its name, as `torch_dtypes` binds
        `torch.bfloat16`; a head dim, its field, or TE 1.9's one). Inputs built into TE's
        objects (a recipe) are not."""
        fields = self.head_dim_fields
        qk, v = fields[0], fields[-1]
        return {
            "head_dim_qk": qk,
            "head_dim_v": v,
            "deterministic": "deterministic",
            "training": "is_training",
            "backward": BACKWARD_FIELD,
            "attention_dropout": "attention_dropout",
            **{name: name for name in (*HELD_AS_IS, *DTYPE_INPUTS)},
            "window_size": "window_size",
            "sliding_window": "window_size",
            "kv_cache": "inference_params",
        }

    def input_expression(self, name: str) -> str:
        """Selector expression for a registry trigger input (see `selector_patch.scenario`)."""
        if name == "padded_head_dim":
            return self.padded_head_dim
        if name == "backward":
            return BACKWARD_FIELD  # a local in every dialect (the codemod's signal adds it)
        if name == "cudnn_version":
            return name if name in self.bound else f"{CUDNN_VERSION_QUERY}()"
        if name == "mla":
            qk, v = (self.field_expression(field) for field in self.head_dim_fields)
            return f"{qk} != {v}"
        if name == "sliding_window":
            window = self.field_expression("window_size")
            return f"{window} is not None and {window}[0] != -1"
        if name == "bhss":
            return " * ".join(self.field_expression(field) for field in BHSS_FIELDS)
        if name == KV_TILE_REMAINDER:
            return f"{self.field_expression('max_seqlen_kv')} % 128"
        if name == "qkv_format":
            return name  # the selector's own local, from its layout
        if name == CAPTURE_FIELD:
            return CAPTURE_FIELD  # a local from TE 2.10 on (the codemod's signal adds it before)
        return self.field_expression(self._scalar_inputs[name])

    def condition_source(self, condition: Condition) -> str:
        """One registry trigger as a selector expression, e.g. `attention_dropout > 0.0`."""
        if condition.input in RECIPE_INPUTS:
            return " and ".join(self.condition_operands(condition))
        expression = self.input_expression(condition.input)
        if condition.input == "kv_cache":  # a KV cache of either kind: `inference_params`
            return f"{expression} is not None"
        if condition.input in DTYPE_INPUTS and condition.op in ("in", "not in"):
            dtypes = ", ".join(f"torch.{value}" for value in condition.value)
            return f"{expression} {condition.op} ({dtypes})"
        if condition.input in DTYPE_INPUTS:
            return f"{expression} {condition.op} torch.{condition.value}"
        if condition.op == "==" and condition.value is True:
            return expression
        if condition.op == "==" and condition.value is False:
            return f"not {expression}"
        return f"{expression} {condition.op} {literal(condition.value)}"

    def condition_operands(self, condition: Condition) -> list[str]:
        """`condition_source` as the `and`-ed operands of a guard's test: a sliding window is
        two (the window is set, its left edge finite), which black lays out one per line."""
        if condition.input == "sliding_window" and condition.op == "==" and condition.value:
            window = self.field_expression("window_size")
            return [f"{window} is not None", f"{window}[0] != -1"]
        if condition.input in RECIPE_INPUTS:
            return self._recipe_operands(condition)
        return [self.condition_source(condition)]

    def _recipe_operands(self, condition: Condition) -> list[str]:
        """An FP8 recipe condition as TE writes its FP8 filters: `fp8` (an FP8 autocast is on),
        then the autocast's recipe read off `fp8_meta` (`fp8_meta["recipe"].fp8_dpa`, or its
        class predicate, `fp8_meta["recipe"].float8_current_scaling()`); an option switched
        off is the negation of both (`not (fp8 and fp8_meta["recipe"].fp8_dpa)`: no FP8
        attention). Only the conditions `asks` admits have a spelling."""
        recipe = f'{self.field_expression("fp8_meta")}["recipe"]'
        if condition.input == "fp8_recipe":
            test = f"{recipe}.{recipes.PREDICATES[condition.value].method}()"
        else:
            test = f"{recipe}.{condition.input}"
        operands = [self.field_expression("fp8"), test]
        if condition.value is False:
            return [f"not ({' and '.join(operands)})"]
        return operands

    @property
    def head_dim_fields(self) -> tuple[str, ...]:
        """`AttentionParams` fields holding head dims: (qk, v), or TE 1.9's single one."""
        if "head_dim_qk" in self.param_fields:
            return ("head_dim_qk", "head_dim_v")
        return ("head_dim",)

    def bindings(self, name: str, scenario: Scenario) -> dict[str, Any]:
        """`AttentionParams` fields, and their values in `scenario`, behind a trigger input."""
        if name in HEAD_DIM_INPUTS:
            if self.head_dim_fields == ("head_dim",):
                return {"head_dim": scenario.padded_head_dim}
            return {"head_dim_qk": scenario.head_dim_qk, "head_dim_v": scenario.head_dim_v}
        if name == "bhss":
            return {factor: getattr(scenario, factor) for factor in BHSS_FIELDS}
        if name == KV_TILE_REMAINDER:
            return {"max_seqlen_kv": scenario.max_seqlen_kv}
        if name == "qkv_format":
            return {"qkv_layout": scenario.qkv_layout}
        if name in RECIPE_INPUTS:
            return recipes.bound(scenario) if self.sees(name) else {}
        field = self._scalar_inputs.get(name)
        if name == "kv_cache" and field in self.param_fields:
            return {field: KV_CACHE if scenario.kv_cache is not None else None}
        if name == "sliding_window" and field in self.param_fields:
            return {field: scenario.window_size}
        if field not in self.param_fields:
            # Not an input of this selector (TE before 1.9 takes no `is_training`), or one
            # TE holds as an object; for the backward, autograd's own answer
            # (`GRAD_MODE_QUERY`) is all there is to bind.
            return {}
        return {field: INPUTS[name](scenario)}

    def sees(self, name: str) -> bool:
        """Whether the selector has the registry input `name` to test (a guard's backward it
        gets from the codemod's signal; `is_training` only where it takes it)."""
        if name == "mla":
            return len(self.head_dim_fields) == 2  # TE 1.9 takes one head dim for q, k and v
        if name in ("padded_head_dim", "backward", "cudnn_version"):
            return True
        if name == "bhss":
            return set(BHSS_FIELDS) <= self.param_fields
        if name == KV_TILE_REMAINDER:
            return "max_seqlen_kv" in self.param_fields
        if name == "qkv_format":
            return name in self.bound
        if name == CAPTURE_FIELD:
            return self.sees_capture or self.can_signal_capture
        if name in RECIPE_INPUTS:
            return {"fp8", "fp8_meta"} <= self.param_fields
        return self._scalar_inputs.get(name) in self.param_fields

    def asks(self, condition: Condition) -> bool:
        """Whether a guard can spell `condition` in this selector's code: it `sees` the input,
        and an FP8 recipe condition is one TE's filters spell: an option switched on or off
        (`fp8_meta["recipe"].fp8_dpa`), or the recipe of a class TE has a predicate for
        (`fp8_meta["recipe"].float8_current_scaling()`; whether the release's recipes define
        it is `te_release.unseen_inputs`'s question)."""
        if not self.sees(condition.input):
            return False
        if condition.input in recipes.OPTIONS:
            return condition.op == "==" and isinstance(condition.value, bool)
        if condition.input == "fp8_recipe":
            return condition.op == "==" and condition.value in recipes.PREDICATES
        return True

    def calls(self, method: str) -> bool:
        """Whether the module calls a method of that name on a name (`fp8_recipe.delayed()`)."""
        return self._scan.calls_method(method)

    def input_fields(self) -> frozenset[str]:
        """`AttentionParams` fields a `Scenario` describes, optional features excepted.

        These are the plain call's inputs; optional features stay at their defaults there.
        """
        fields = set(Scenario.FIELDS)
        fields.update(self._scalar_inputs.values(), self.head_dim_fields)
        return frozenset((fields - OPTIONAL_FIELDS) & self.param_fields)

    @cached_property
    def module_aliases(self) -> dict[str, str]:
        """What the module's top-level `import x [as y]` statements bind, to the module each
        names (`te` to `transformer_engine`; `import torch.nn` binds `torch` to `torch`)."""
        aliases = {}
        for node in self.module.body:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    top = alias.name.partition(".")[0]
                    aliases[alias.asname or top] = alias.name if alias.asname else top
        return aliases

    @property
    def module_imports(self) -> frozenset[str]:
        """Names the module's top-level `import x` statements bind (`torch`, `os`, ...)."""
        return frozenset(self.module_aliases)

    @cached_property
    def pure_imports(self) -> dict[str, str]:
        """The pure functions the module imports (`PURE_IMPORTS`), by the name it calls them
        (`PkgVersion`): each one's qualified name (`packaging.version.Version`)."""
        found = {}
        for node in self.module.body:
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    qualified = f"{node.module}.{alias.name}"
                    if qualified in PURE_IMPORTS:
                        found[alias.asname or alias.name] = qualified
        return found

    @cached_property
    def module_functions(self) -> dict[str, Any]:
        """Pure functions the module imports, by the name it calls them (`pure_imports`)."""
        return {name: PURE_IMPORTS[qualified] for name, qualified in self.pure_imports.items()}

    @cached_property
    def module_predicates(self) -> dict[str, Predicate]:
        """The module's pure predicates (`predicates`), over its constants, pure imports and
        the pure builtins."""
        return module_predicates(self.module, self._pure_names)

    @cached_property
    def module_pure_functions(self) -> dict[str, ast.FunctionDef]:
        """The module's pure functions with statements (`pure_functions`: TE's
        `get_qkv_format`), run where the selector calls them."""
        return pure_functions(
            self.module, self._pure_names, self.module_predicates, self.function_text_names
        )

    @property
    def _pure_names(self) -> set[str]:
        """What the module's own pure code may read: its constants, pure imports, builtins."""
        return {*self.module_names, *self.module_functions, *PURE_BUILTINS}

    @property
    def torch_dtypes(self) -> Mapping[str, Value]:
        """`torch.bfloat16` and the other dtypes, each as the name a scenario holds a dtype
        input by (`"bfloat16"`), so that `qkv_dtype in [torch.float16, ...]` compares like with
        like. Every spelling is bound, read or not: a name no code reads costs a run nothing,
        where finding out which the module reads took a walk of all of it (on TE 2.20.2's
        17,000 nodes, the largest single cost of a flake8 run's analysis)."""
        return TORCH_DTYPE_VALUES

    @cached_property
    def module_names(self) -> dict[str, Value]:
        """The module's constants: names bound once, at top level, to a literal
        (`SM12X = ((12, 0), (12, 1))`; a set display reads as a frozenset, a list as a tuple, a
        dict as a read-only mapping) or to one built from literals (`frozenset({(8, 6), (8,
        9)})`, a comprehension over literals), and never rebound, declared `global`, called a
        method on, or assigned or deleted an item of, anywhere in the module."""
        candidates = {}
        for node in self.module.body:
            if (
                isinstance(node, ast.Assign)
                and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
            ):
                value = _immutable_literal(node.value)
                if value is not _NOT_LITERAL:
                    candidates[node.targets[0].id] = (node, value)
        if not candidates:
            return {}
        found = self._scan
        # A candidate's own top-level assignment is one store; any other changes it. One named
        # like a builder is a builder changed.
        changed = {
            name
            for name in candidates
            if found.stores(name) > 1 or found.changes(name) or name in CONSTANT_BUILDERS
        }
        built = [
            name
            for name, (node, _) in candidates.items()
            if name not in changed and _literal(node.value) is None
        ]
        if built and any(  # a module of its own `frozenset`: literals only
            found.stores(builder) or found.changes(builder) for builder in CONSTANT_BUILDERS
        ):
            changed.update(built)
        return {
            name: const(value) for name, (_, value) in candidates.items() if name not in changed
        }

    @cached_property
    def params_class(self) -> ast.ClassDef | None:
        """The module's `AttentionParams` dataclass (named by the argument's annotation); None
        for a selector that takes keyword inputs."""
        if selector_inputs(self.function):
            return None
        argument = selector_parameter(self.function)
        annotation = argument.annotation if argument else None
        name = PARAMS_CLASS
        if isinstance(annotation, ast.Name):
            name = annotation.id
        elif isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
            name = annotation.value
        for node in self.module.body:
            if isinstance(node, ast.ClassDef) and node.name == name:
                return node
        return None

    @cached_property
    def param_defaults(self) -> dict[str, Any]:
        """Literal dataclass defaults of `AttentionParams` fields, or of the keyword inputs'
        parameters (others are left out)."""
        defaults = {}
        arguments = self.function.args
        positional = [*arguments.posonlyargs, *arguments.args]
        given = [
            *zip(positional[len(positional) - len(arguments.defaults) :], arguments.defaults),
            *zip(arguments.kwonlyargs, arguments.kw_defaults),
        ]
        for argument, default in given:
            if argument.arg in selector_inputs(self.function) and default is not None:
                with contextlib.suppress(ValueError):
                    defaults[argument.arg] = ast.literal_eval(default)
        for stmt in self.params_class.body if self.params_class else ():
            if (
                isinstance(stmt, ast.AnnAssign)
                and isinstance(stmt.target, ast.Name)
                and stmt.value is not None
            ):
                try:
                    defaults[stmt.target.id] = ast.literal_eval(stmt.value)
                except ValueError:
                    continue
        return defaults

    @cached_property
    def param_fields(self) -> frozenset[str]:
        """Fields of `AttentionParams`: declared in the dataclass or read by the selector; or
        the keyword inputs of a selector that takes no `AttentionParams`."""
        fields = set(selector_inputs(self.function))
        for stmt in self.params_class.body if self.params_class else ():
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                fields.add(stmt.target.id)
        fields.update(function_index(self.function).fields)
        return frozenset(fields)

    @cached_property
    def _assignments(self) -> dict[str, list[ast.Assign]]:
        """The function's assignments by each plain name they bind, in source order."""
        found: dict[str, list[ast.Assign]] = {}
        for node in function_index(self.function).assignments:
            for name in {t.id for t in node.targets if isinstance(t, ast.Name)}:
                found.setdefault(name, []).append(node)
        return found

    @cached_property
    def backend_flags(self) -> frozenset[str]:
        """Names holding backend on/off state: role flags and the names they are `and`-ed from.

        TE 2.x computes `use_flash_attention_4 = use_flash_attention and ...`, so switching
        `use_flash_attention` off (directly or in `_disable_all_flash_attention()`) switches
        FA4 off too.
        """
        flags = set(self.roles().values())
        return frozenset(flags.union(*(self.sources(flag) for flag in flags)))

    def sources(self, flag: str) -> frozenset[str]:
        """The names `flag` is assigned an `and` of, or assigned outright (TE 2.x's
        `use_flash_attention_4 = use_flash_attention and ...`): off, they switch it off too."""
        found = set()
        for node in self._assignments.get(flag, ()):
            value = node.value
            if isinstance(value, ast.BoolOp) and not isinstance(value.op, ast.And):
                continue
            operands = value.values if isinstance(value, ast.BoolOp) else [value]
            found.update(o.id for o in operands if isinstance(o, ast.Name))
        return frozenset(found)


_NOT_LITERAL = object()


#: Builtins a module constant may be built with: `frozenset({(8, 6), (8, 9)})` is the same
#: constant as the tuple a guard writes inline.
CONSTANT_BUILDERS = {"frozenset": frozenset, "tuple": tuple, "set": set}
#: Nodes a constant's expression may hold: literals, builder calls and comprehensions, and the
#: tests of a comprehension's `if`.
_LITERAL_NODES = (ast.Constant, ast.Tuple, ast.List, ast.Set, ast.Dict, ast.Load, ast.Store)
_BUILDING_NODES = (ast.Call, ast.Name, ast.comprehension, ast.GeneratorExp, ast.ListComp)
_TEST_NODES = (ast.UnaryOp, ast.Compare, ast.BoolOp, ast.IfExp, ast.unaryop, ast.cmpop, ast.boolop)
_CONSTANT_NODES = (*_LITERAL_NODES, *_BUILDING_NODES, ast.SetComp, *_TEST_NODES)


def _immutable_literal(node: ast.expr) -> Any:
    """The value of a constant made only of immutable parts (sets as frozensets), else
    `_NOT_LITERAL`: a literal, or one built from literals by `frozenset(...)`, `tuple(...)`,
    `set(...)` and comprehensions over literals."""
    value = _literal(node)
    return _frozen(_built_constant(node) if value is None else value[0])


def _literal(node: ast.expr) -> tuple[Any] | None:
    """`(value,)` of a plain literal, None for anything else."""
    try:
        return (ast.literal_eval(node),)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


def _built_constant(node: ast.expr) -> Any:
    """The value of an expression built from literals by the builders and comprehensions, or
    `_NOT_LITERAL`. Every name it reads is a builder or a comprehension's own variable, so
    evaluating it runs nothing of the module's."""
    own = {
        name.id
        for comprehension in descendants(node)
        if isinstance(comprehension, ast.comprehension)
        for name in descendants(comprehension.target)
        if isinstance(name, ast.Name)
    }
    for child in descendants(node):
        if not isinstance(child, _CONSTANT_NODES):
            return _NOT_LITERAL
        if isinstance(child, ast.Call) and not (
            isinstance(child.func, ast.Name)
            and child.func.id in CONSTANT_BUILDERS
            and len(child.args) <= 1
            and not child.keywords
        ):
            return _NOT_LITERAL
        if isinstance(child, ast.Name) and child.id not in CONSTANT_BUILDERS.keys() | own:
            return _NOT_LITERAL
    try:
        code = compile(ast.Expression(node), "<constant>", "eval")
        return eval(code, {"__builtins__": dict(CONSTANT_BUILDERS)})  # noqa: S307
    except Exception:  # an expression that fails when evaluated (`tuple(1)`) is no constant
        return _NOT_LITERAL


def _frozen(value: Any) -> Any:
    """`value` with no part that can change: a list as a tuple, a set as a frozenset, a dict
    as a read-only view (`module_names` has made sure that the module never changes them)."""
    if isinstance(value, IMMUTABLE_LITERALS):
        return value
    if isinstance(value, (tuple, list)):
        items = tuple(_frozen(item) for item in value)
        return _NOT_LITERAL if _NOT_LITERAL in items else items
    if isinstance(value, (set, frozenset)):
        items = [_frozen(item) for item in value]
        return _NOT_LITERAL if _NOT_LITERAL in items else frozenset(items)
    if isinstance(value, dict):
        pairs = [(_frozen(key), _frozen(item)) for key, item in value.items()]
        if any(_NOT_LITERAL in pair for pair in pairs):
            return _NOT_LITERAL
        return MappingProxyType(dict(pairs))
    return _NOT_LITERAL
