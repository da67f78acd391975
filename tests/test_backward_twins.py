"""A forward-only request is answered by its eval twin only where the selection was never told
that a backward will run (`selector_patch.harness.grad_state`).

TE's releases never look at autograd (`test_snapshot` checks a sample of TE 2.20.2's answers,
twins included, against `select()`); the codemod's result does, through its `requires_backward`
field, and is asked in every mode.
"""

from __future__ import annotations

import dataclasses
import random

from selector_patch.harness.device import Machine, TorchView, VirtualDevice
from selector_patch.harness.grad_state import names_it
from selector_patch.registry import HAZARDS
from selector_patch.scenario import Scenario
from selector_patch.snapshot import grid_for
from selector_patch.snapshot.grid import MODES
from selector_patch.snapshot.outcome import Reader
from selector_patch.snapshot.runner import _mode_twins, resolve, run
from selector_patch.testing.inputs import request_of


def test_forward_only_is_eval_without_the_backward() -> None:
    assert _mode_twins(tuple(MODES)) == {"forward": "eval"}
    assert _mode_twins(("forward", "training")) == {}


def test_code_naming_autograd_is_seen_in_nested_code_too() -> None:
    told = "def f(x):\n    return [torch.is_grad_enabled() for _ in x]\n"
    assert names_it(compile(told, "told.py", "exec"))
    assert names_it(compile("def f():\n    with torch.no_grad():\n        pass\n", "f", "exec"))
    assert not names_it(compile("def f(params):\n    return params.is_training\n", "f", "exec"))


def test_a_function_bound_at_import_is_counted_at_each_call() -> None:
    view = TorchView(VirtualDevice(Machine.of(Scenario())))
    factory = view.is_grad_enabled  # as `field(default_factory=torch.is_grad_enabled)` binds it
    before = view.reads
    factory(), factory()
    assert view.reads == before + 2
    assert view.float16 is not None and view.reads == before + 2  # the rest is not counted
    assert view.autograd is not None and view.reads == before + 3
    view.told(("is_training", "requires_backward"))
    assert view.reads == before + 4


def test_a_selector_told_the_backward_is_asked_in_every_mode(codemod_result) -> None:
    """The codemod's TE 2.20.2 guards FA4's deterministic backward on sm120: there its
    forward-only picks differ from eval's, and every answer of the grid is `select()`'s."""
    loaded = codemod_result("2.20.2").selector
    grid = dataclasses.replace(grid_for([loaded], HAZARDS), architectures=((12, 0),))
    outcomes = run(loaded, grid)
    by_mode: dict[str, dict] = {"eval": {}, "forward": {}}
    for position, outcome in enumerate(outcomes):
        configuration = grid.at(position)
        if configuration.mode in by_mode:
            by_mode[configuration.mode][(configuration.switches, configuration.row)] = position
    differ = [
        (position, by_mode["forward"][key])
        for key, position in by_mode["eval"].items()
        if outcomes[position].pick != outcomes[by_mode["forward"][key]].pick
    ]
    assert differ
    reader, namespace = Reader(), loaded.module.__dict__
    sample = random.Random(7).sample(list(by_mode["forward"].values()), 200)
    for position in sample + [forward for _, forward in differ[:20]]:
        keywords = {
            name: resolve(value, namespace)
            for name, value in grid.keywords(grid.at(position)).items()
        }
        scenario, params = request_of(keywords, loaded.params_fields)
        assert outcomes[position] == reader.outcome(loaded.select(scenario, params)), keywords
