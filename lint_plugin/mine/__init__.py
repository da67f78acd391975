"""The miner: the kernel libraries' own failures, cross-checked against TE's selector.

Two sides read kernel sources, each in its own subpackage: `cute` reads flash-attn-4's Python
(architecture-conditioned `assert` / `raise`, with `ast`), `cuda` reads flash-attn 2 and 3's
C++ dispatch (`TORCH_CHECK`s and paths that launch no kernel, with tree-sitter). Both state
what they find as `findings.Case`s - a site, the architectures and the selector inputs it
fires for, or why the judges need not take it - and the rest is shared: `te_calls` reads TE's
own calls into each kernel (a refusal on a parameter TE never passes is unreachable through
TE), `candidates` turns a case into a registry-shaped hazard, `crosscheck` lets the analyzer
and the harness judge it per architecture, `declare` and `report` say what was found, `history`
what changed between releases, and `devices` holds the architectures and their shared memory.
`python -m lint_plugin.mine` runs them all.
"""
