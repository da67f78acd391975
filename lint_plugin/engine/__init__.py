"""The analysis engine: abstract interpretation of a selector's AST, shared by every face.

`program` and `slicing` hold what the source alone says, `absint` and `interpreter` run it on
abstract values, `dialect` and `dispatch` name what a TE release binds and returns, and
`analysis` (registry hazards), `coverage` (generic filter kinds) and `anchors` (where a guard
goes) are the questions asked of it; `collector` keeps the garbage collector out of their way.
The flake8 plugin, the codemod and the miner call these; nothing here imports flake8 or libcst.
"""
