"""A selector request in the words its users know, turned into a `Scenario` and back.

People who test a TE selector think in compute capability, `AttentionParams` fields, `NVTE_*`
variables and installed packages, not in this project's `Scenario`. `request_of` accepts:

- every `Scenario` field (`compute_capability=(12, 0)`, `cudnn_version`, `flash_attn_2` /
  `flash_attn_3` / `flash_attn_4` versions, None for "not installed", `fused_backend`,
  `deterministic`, `training`, `backward`, `attention_dropout`, head dims, shapes, ...);
- TE's spellings of the same facts: `is_training` (training), `requires_backward` (backward),
  `head_dim` (both head dims; `head_dim_qk` / `head_dim_v` given beside it win);
- `NVTE_*` variables as keywords (`NVTE_FUSED_ATTN="0"`) or in `env={...}`;
- any other field of the release's `AttentionParams` that is no `Scenario` field (`fp8`,
  `fp8_meta`, `inference_params`, `context_parallel`), passed to the dataclass as given, over
  what the harness builds from the scenario.

`keyword_inputs` is the inverse, used to write cases down (hazard cases, emitted test modules):
`request_of(keyword_inputs(s), ...) == (s, {})` for every scenario.
"""

from __future__ import annotations

from typing import Any, Mapping

from selector_patch.scenario import Scenario

DEFAULT = Scenario()
SCENARIO_FIELDS = Scenario.FIELDS
#: `AttentionParams` names of facts a `Scenario` holds under another name.
ALIASES = {"is_training": "training", "requires_backward": "backward"}
#: Sets both head dims, unless `head_dim_qk` / `head_dim_v` are given too.
HEAD_DIM = "head_dim"
#: Keywords that set several `Scenario` fields to one value.
JOINT = {HEAD_DIM: ("head_dim_qk", "head_dim_v")}
ENV_PREFIX = "NVTE_"
VOCABULARY = ", ".join((*SCENARIO_FIELDS, *ALIASES, HEAD_DIM, f"{ENV_PREFIX}*"))


def _environment(values: Mapping[str, Any], where: str) -> dict[str, str]:
    env = {}
    for name, value in values.items():
        if not name.startswith(ENV_PREFIX):
            raise TypeError(f"{where}: env {name!r} is not an {ENV_PREFIX}* variable")
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            raise TypeError(f"{where}: {name}={value!r} must be a string, as in the environment")
        env[name] = str(value)
    return env


def request_of(
    inputs: Mapping[str, Any],
    params_fields: tuple[str, ...],
    base: Scenario = DEFAULT,
    where: str = "select()",
) -> tuple[Scenario, dict[str, Any]]:
    """The scenario `inputs` describe (changes to `base`) and the further `AttentionParams`
    fields they set; an input that is none of the above is a `TypeError` naming it."""
    changes: dict[str, Any] = {}
    params: dict[str, Any] = {}
    env = _environment(inputs.get("env", {}), where)
    for keyword, fields in JOINT.items():
        if keyword in inputs:
            changes.update(dict.fromkeys(fields, inputs[keyword]))
    for name, value in inputs.items():
        if name in ("env", HEAD_DIM):
            continue
        if name.startswith(ENV_PREFIX):
            env.update(_environment({name: value}, where))
        elif name in ALIASES or name in SCENARIO_FIELDS:
            field = ALIASES.get(name, name)
            if field in changes and name not in ("head_dim_qk", "head_dim_v"):
                raise TypeError(f"{where}: {field} is given twice (as {name!r} too)")
            changes[field] = value
        elif name in params_fields:
            params[name] = value
        else:
            raise TypeError(
                f"{where}: unknown input {name!r}: not one of {VOCABULARY}, nor a field of"
                " this release's AttentionParams"
            )
    for name, size in (("compute_capability", 2), ("cudnn_version", 3)):
        value = changes.get(name)
        if value is not None and not (
            isinstance(value, (tuple, list))
            and len(value) == size
            and all(isinstance(part, int) for part in value)
        ):
            raise TypeError(f"{where}: {name}={value!r} must be a tuple of {size} integers")
    if env:
        changes["env"] = env
    return base.with_changes(changes), params


def keyword_inputs(scenario: Scenario, always: tuple[str, ...] = ()) -> dict[str, Any]:
    """`scenario` as keywords: the fields that differ from the defaults (and those in `always`),
    in `Scenario`'s order, then its `NVTE_*` variables, sorted."""
    inputs = {
        name: getattr(scenario, name)
        for name in SCENARIO_FIELDS
        if name != "env" and (name in always or getattr(scenario, name) != getattr(DEFAULT, name))
    }
    inputs.update(scenario.env)
    return inputs


def describe(inputs: Mapping[str, Any]) -> str:
    """`name=value, ...`: a request as the caller would have typed it."""
    return ", ".join(f"{name}={value!r}" for name, value in inputs.items())
