"""The parts of `lint_plugin.engine.interpreter`: how statements execute, how expressions
evaluate, how names are bound, how a condition refines a state, and the folding and control-flow
records they share. `Interpreter` composes them."""
