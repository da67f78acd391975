"""The virtual-device harness: TE's real attention selector, run on a CPU-only machine.

`load_selector(source)` loads the selector file of any TE release, checkout or mutant;
`LoadedSelector.select(scenario)` runs TE's own `get_attention_backend` on the device the
scenario describes and returns a `Selection`. Only what the machine lacks is stubbed (the
compiled extension, TE internals, flash-attn, package metadata, hardware queries); no selection
logic is re-implemented. What the harness cannot run (the selector's own code raising, at import
or while selecting) is a `LoadError` (`SelectionError` while selecting) whose `str()` is one line
naming the file. Importing this package imports torch.
"""

from selector_patch.harness.failures import LoadError, SelectionError
from selector_patch.harness.loader import LoadedSelector, load_selector
from selector_patch.harness.opaque import OpaqueDecision
from selector_patch.harness.params import Unrepresentable
from selector_patch.harness.selection import Selection

__all__ = [
    "LoadError",
    "LoadedSelector",
    "OpaqueDecision",
    "Selection",
    "SelectionError",
    "Unrepresentable",
    "load_selector",
]
