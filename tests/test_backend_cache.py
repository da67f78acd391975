"""TE's own backend cache, run from the release's `dot_product_attention.py`: a forward-only FA4
choice is never handed to a call whose backward autograd records.

`DotProductAttention.forward` reselects only when the new `AttentionParams` differ from the
cached ones. The statements that do this are taken from the release's own file (its AST, not a
copy written here) and run against the selector module the harness loaded, so the cache is
TE's code and its equality is TE's `AttentionParams.__eq__`. A first call under `no_grad` picks
FA4 on SM 12.0; a second, equal in every field TE passes but with autograd on, must not reuse
it: after the codemod (the `requires_backward` field) and with the runtime patch (the same field,
on a subclass). Unpatched, it does: the bug the field exists for.
"""

from __future__ import annotations

import ast
import logging
import types
from pathlib import Path

import pytest
import torch
from guarded_selectors import patched as with_guards
from packaging.version import Version

from selector_patch import runtime
from selector_patch.harness import load_selector
from selector_patch.harness.params import attention_params_kwargs
from selector_patch.registry import HAZARDS, ISOLATING_ENV
from selector_patch.scenario import Scenario
from selector_patch.sources import CORPUS_RELEASES

WITH_FA4 = [v for v in CORPUS_RELEASES if Version(v) >= Version("2.15.0")]
CACHE_TEST = "attention_params != _attention_backends['attention_params']"
#: Seed 000's call, deterministic on SM 12.0 with FA4 the only flash backend.
CALL = Scenario(
    compute_capability=(12, 0),
    deterministic=True,
    flash_attn_2=None,
    env=tuple(ISOLATING_ENV["FA4"].items()),
)


def cached_selection(source_path: Path):
    """TE's cache lookup and selection, from `DotProductAttention.forward`, as a function of
    the params, the `dpa_utils` module and the cache dict (TE's own initial one)."""
    tree = ast.parse(source_path.read_text(encoding="utf-8"))
    statements = initial = None
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "_attention_backends":
            initial = node.value
        for body in (getattr(node, name, None) for name in ("body", "orelse")):
            for index, stmt in enumerate(body if isinstance(body, list) else ()):
                if isinstance(stmt, ast.If) and CACHE_TEST in ast.unparse(stmt.test):
                    statements = body[index : index + 2]
    assert statements is not None and initial is not None, source_path
    module = ast.parse(
        "def cached_selection(attention_params, self):\n"
        "    return use_flash_attention, flash_attention_backend\n"
    )
    function = module.body[0]
    function.body[:0] = statements
    module = ast.fix_missing_locations(module)
    namespace: dict = {"torch": torch}
    exec(compile(module, str(source_path), "exec"), namespace)
    cache = eval(compile(ast.Expression(initial), str(source_path), "eval"))
    return namespace["cached_selection"], cache, namespace


def two_calls(selector, source_path: Path) -> tuple:
    """What TE's cache hands a forward-only call, then the same call with autograd on."""
    select, cache, namespace = cached_selection(source_path)
    namespace.update(_attention_backends=cache, dpa_utils=None)
    owner = types.SimpleNamespace(logger=logging.getLogger("te-attn-guards.tests"))
    picked = []
    with selector.pinned(CALL) as module:
        namespace["dpa_utils"] = module
        kwargs = attention_params_kwargs(CALL, selector.params_fields, module.__dict__)
        for grad in (False, True):
            with torch.set_grad_enabled(grad):
                params = module.AttentionParams(**kwargs)
                use_flash, flash_version = select(params, owner)
            picked.append(str(flash_version) if use_flash else None)
    return tuple(picked)


@pytest.fixture(scope="module", params=WITH_FA4)
def release_source(request, release):
    return release(request.param)


def dpa_file(source) -> Path:
    return source.path.with_name("dot_product_attention.py")


def test_unpatched_cache_reuses_the_forward_only_choice(release_source):
    selector = load_selector(release_source)
    assert two_calls(selector, dpa_file(release_source)) == ("4.0.0b24", "4.0.0b24")


def test_codemod_field_makes_the_cache_reselect(release_source):
    text = with_guards(release_source.path.read_text())
    selector = load_selector(release_source, text=text)
    assert two_calls(selector, dpa_file(release_source)) == ("4.0.0b24", None)


def test_runtime_patch_makes_the_cache_reselect(release_source):
    selector = load_selector(release_source)
    runtime.install(selector.module, HAZARDS)
    try:
        assert two_calls(selector, dpa_file(release_source)) == ("4.0.0b24", None)
    finally:
        runtime.uninstall(selector.module)
