"""The miner: flash-attn-4's own "not supported on SM X" checks, cross-checked against TE.

`extract` finds the architecture-conditioned refusals in the kernel's AST, `features` and
`cases` put them in selector inputs, `candidates` turns each into a registry-shaped hazard,
`crosscheck` lets the analyzer and the harness judge it, and `declare` / `report` say what was
found. `python -m lint_plugin.mine` runs them all.
"""
