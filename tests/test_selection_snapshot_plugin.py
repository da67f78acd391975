"""The pytest plugin's `te_selection_snapshot`: a selector against its committed snapshot.

Inner sessions (`pytester`, the plugin found through its entry point) on a checkout of TE 2.2.0:
without a snapshot the test fails and says how to record one; `--te-snapshot-update` records it
(syrupy's layout: `__snapshots__/<module>/<test>.json`); a reformatted selector still passes; a
changed one fails with the selection diff's regions, and passes once the snapshot is updated.
"""

from __future__ import annotations

import shutil

import pytest
import torch  # noqa: F401  (imported once here: pytester's inner sessions cannot import it anew)

from selector_patch.sources import CACHE_VARIABLE, cache_dir

CACHE = cache_dir()
TEST = """
def test_selection(te_selection_snapshot):
    te_selection_snapshot.assert_match()
"""
DROPOUT_FILTER = (
    "    if attention_dropout != 0.0 and use_flash_attention_3:\n"
    '        logger.debug("Disabling FlashAttention 3 for dropout")\n'
    "        use_flash_attention_3 = False\n"
)


@pytest.fixture
def pytester(pytester: pytest.Pytester, monkeypatch) -> pytest.Pytester:
    monkeypatch.setenv(CACHE_VARIABLE, str(CACHE))
    return pytester


def test_snapshot_recorded_kept_and_failing_on_a_changed_selector(pytester, release) -> None:
    source = release("2.2.0")
    checkout = pytester.path / "TransformerEngine"
    shutil.copytree(source.root, checkout)
    selector = checkout / source.path.relative_to(source.root)
    pytester.makepyfile(test_snap=TEST)
    run = ("--te-selector", str(checkout), "-p", "no:cacheprovider")
    snapshot = pytester.path / "__snapshots__" / "test_snap" / "test_selection.json"

    missing = pytester.runpytest(*run)
    missing.assert_outcomes(failed=1)
    missing.stdout.fnmatch_lines(
        ["*no selection snapshot at *test_selection.json*--te-snapshot-update*"]
    )

    pytester.runpytest(*run, "--te-snapshot-update").assert_outcomes(passed=1)
    assert snapshot.is_file()
    recorded = snapshot.read_text()
    pytester.runpytest(*run).assert_outcomes(passed=1)

    text = selector.read_text()
    selector.write_text(text.replace(DROPOUT_FILTER, DROPOUT_FILTER + "\n    print('fork')\n"))
    pytester.runpytest(*run).assert_outcomes(passed=1)  # a print changes no pick

    selector.write_text(text.replace(DROPOUT_FILTER, ""))
    changed = pytester.runpytest(*run)
    changed.assert_outcomes(failed=1)
    changed.stdout.fnmatch_lines(
        [
            "*the selector's picks differ from *test_selection.json*",
            "*sm90*attention_dropout > 0.0: FlashAttention 2 → FlashAttention 3*",
            "*witness: select(compute_capability=(9, 0)*attention_dropout=0.1*",
            "*Disabling FlashAttention 3 for dropout*",
        ]
    )
    assert snapshot.read_text() == recorded  # a failing run writes nothing
    pytester.runpytest(*run, "--te-snapshot-update").assert_outcomes(passed=1)
    assert snapshot.read_text() != recorded
    pytester.runpytest(*run).assert_outcomes(passed=1)
