"""Which names a given selector binds for each backend role and each hazard input.

TE renamed things across releases (see `selector_patch.roles`); forks rename more. Analysis and
codemod both ask this module, never hard-code a spelling: a role resolves to the first of its
candidate flag names that the selector function assigns, and an input such as "backward"
resolves to `requires_backward` where the function binds it, else to `is_training`.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import cached_property

from selector_patch.roles import ROLES

#: Default names of the functions that select a backend; configurable in the plugin.
SELECTOR_FUNCTIONS = ("get_attention_backend",)


def find_selectors(tree: ast.Module, names=SELECTOR_FUNCTIONS) -> list[ast.FunctionDef]:
    """Top-level (or class-level) functions named like a selector, in source order."""
    found = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name in names:
            found.append(node)
        elif isinstance(node, ast.ClassDef):
            found.extend(find_selectors(ast.Module(body=node.body, type_ignores=[]), names))
    return found


def assigned_names(function: ast.FunctionDef) -> set[str]:
    """Every name the function body binds (its own scope and nested helper scopes)."""
    names = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    return names


@dataclass
class Dialect:
    """The names one selector function uses; built once per function."""

    function: ast.FunctionDef
    module: ast.Module

    @cached_property
    def bound(self) -> set[str]:
        return assigned_names(self.function)

    @cached_property
    def module_text_names(self) -> set[str]:
        """Dotted names used anywhere in the module (`FlashAttentionUtils.is_installed`, ...)."""
        names = set()
        for node in ast.walk(self.module):
            if isinstance(node, ast.Name):
                names.add(node.id)
            elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                names.add(f"{node.value.id}.{node.attr}")
        return names

    def flag(self, role: str) -> str | None:
        """The selector-local flag of `role`, or None when this selector has no such backend."""
        for name in ROLES[role].flags:
            if name in self.bound:
                # `use_flash_attention` is FA2's flag only where no numbered FA2 flag exists.
                return name
        return None

    def installed(self, role: str) -> str | None:
        """The expression TE uses for "this role's package is installed", if any."""
        for expression in ROLES[role].installed:
            if expression in self.module_text_names:
                return expression
        return None

    def roles(self) -> dict[str, str]:
        """Every role this selector has, mapped to its flag name."""
        return {role: flag for role in ROLES if (flag := self.flag(role)) is not None}

    @property
    def backward(self) -> str:
        """Selector name meaning "a backward pass will run"."""
        return "requires_backward" if "requires_backward" in self.bound else "is_training"

    @property
    def padded_head_dim(self) -> str:
        """Selector expression for the head dim flash-attn pads to."""
        if "fa2_padded_head_dim" in self.bound:
            return "fa2_padded_head_dim"
        if "head_dim_v" in self.bound:
            return "max(head_dim_qk, head_dim_v)"
        return "head_dim"  # TE 1.9: one head dim for q, k and v

    def input_expression(self, name: str) -> str:
        """Selector expression for a registry trigger input (see `selector_patch.scenario`)."""
        return {
            "deterministic": "deterministic",
            "training": "is_training",
            "backward": self.backward,
            "attention_dropout": "attention_dropout",
            "padded_head_dim": self.padded_head_dim,
        }[name]
