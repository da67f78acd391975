"""A release's compiled query (`selector_patch.te_lib`) answers as TE's source compiled does.

TE 2.18.0 is the release both exist for: its C++ in `../shared/te-cxx`, its
`libtransformer_engine.so` in the `transformer-engine-cu13` wheel (fetched once into the cache,
about 280 MB). The two are asked the same calls directly - a sample of architecture x cuDNN x
mode x dtypes (FP8 included) x layouts x masks x bias x softmax x dropout x head dims x lengths
x window x determinism x `NVTE_FUSED_ATTN_BACKEND` - and through `select()` on the fidelity
grid, one selector with the trees configured and one with none (so the library answers). TE
2.19.0, whose sources are not public, is answered by its library too (its cu13 wheel, about 245
MB): `verify` states no assumption for either. The library runs in a helper process: the test
process never has a CUDA symbol defined.
"""

from __future__ import annotations

import ctypes
import itertools
import random
import zipfile

import pytest

from fidelity_grid import requests
from selector_patch import te_lib
from selector_patch.__main__ import main
from selector_patch.harness import Unrepresentable, load_selector
from selector_patch.scenario import Scenario
from selector_patch.te_cxx import TE_CXX_VARIABLE
from selector_patch.te_cxx.query import QueryFailure, load
from selector_patch.testing.inputs import SCENARIO_FIELDS, request_of

VALUES = {
    "bool": (False, True),
    "float": (0.0, 0.1),
    "num_attn_heads": (16,),
    "num_gqa_groups": (16, 4),
    "max_seqlen_q": (1, 128, 512, 4096),
    "max_seqlen_kv": (128, 512, 2048),
    "head_dim_qk": (64, 128, 192, 256),
    "head_dim_v": (64, 128, 256),
    "window_size_left": (-1, 128),
    "window_size_right": (-1, 0),
}
ARCHITECTURES = (80, 86, 89, 90, 100, 103, 110, 120, 121)
CUDNN = (8907, 90100, 90700, 91000, 91301, 91801, 92100)
ENVIRONMENTS = (None, "0", "1", "2")
SAMPLE = 20_000


@pytest.fixture
def no_trees(monkeypatch, tmp_path):
    """No directory of C++ trees configured: the release's library is the query."""
    monkeypatch.delenv(TE_CXX_VARIABLE, raising=False)
    monkeypatch.chdir(tmp_path)


def _choices(parameter, enums) -> tuple:
    if parameter.kind == "enum":
        return tuple(enums[parameter.enum].values())
    return VALUES.get(parameter.name) or VALUES[parameter.kind]


def test_the_library_answers_as_the_source_on_a_grid(te_cxx):
    source = load(te_cxx / "2.18.0")
    library = te_lib.load("2.18.0")

    def signature(query):  # the Python-side enum each takes; a scalar's C type
        return [(p.kind, p.enum or p.type) for p in query.parameters]

    assert signature(library) == signature(source)
    assert {name: library.enums[name] for name in source.enums} == source.enums
    axes = [_choices(p, library.enums) for p in library.parameters]
    frames = list(itertools.product(ARCHITECTURES, CUDNN, ENVIRONMENTS))
    generator = random.Random(44)
    kv_dtype = [p.name for p in library.parameters].index("kv_dtype")
    outcomes = {"answered": 0, "threw": 0}
    for index in range(SAMPLE):
        sm_arch, cudnn, backend_variable = frames[index % len(frames)]
        arguments = [generator.choice(axis) for axis in axes]
        if generator.random() < 0.9:  # TE asserts that Q and KV share a dtype
            arguments[kv_dtype] = arguments[kv_dtype - 1]

        def environment(name: str, value=backend_variable):
            return value if name == "NVTE_FUSED_ATTN_BACKEND" else None

        answers = []
        for query in (source, library):
            try:
                answers.append(query(sm_arch, cudnn, environment, arguments))
            except QueryFailure as failure:  # TE's message, after where it was thrown
                answers.append(("threw", str(failure).partition(" in function ")[2]))
        assert answers[0] == answers[1], (sm_arch, cudnn, backend_variable, arguments)
        outcomes["threw" if answers[0][0] == "threw" else "answered"] += 1
    assert outcomes["answered"] > SAMPLE / 2, outcomes


def test_a_request_asked_again_is_answered_without_the_helper(te_cxx, monkeypatch):
    """The helper's replies are kept (`te_cxx.replies`): a request asked again costs no round
    trip, and its answer (or TE's exception) is the source's still."""
    source = load(te_cxx / "2.18.0")
    library = te_lib.load("2.18.0")
    round_trips = []
    read = library._read
    monkeypatch.setattr(library, "_read", lambda: round_trips.append(1) or read())
    axes = [_choices(p, library.enums) for p in library.parameters]
    generator = random.Random(45)

    def answers(query, arguments):
        try:
            return query(90, 91801, lambda _name: None, arguments)
        except QueryFailure as failure:  # TE's message, after where it was thrown
            return "threw", str(failure).partition(" in function ")[2]

    for _ in range(200):
        arguments = [generator.choice(axis) for axis in axes]
        expected = answers(source, arguments)
        assert answers(library, arguments) == expected, arguments
        before = len(round_trips)
        assert answers(library, arguments) == expected, arguments
        assert len(round_trips) == before, arguments


def test_select_through_the_library_equals_select_through_the_source(te_cxx, release, no_trees):
    compiled = load_selector(release("2.18.0"), te_cxx=te_cxx)
    shipped = load_selector(release("2.18.0"))
    assert compiled.fused_assumption is None and shipped.fused_assumption is None
    compared = 0
    for keywords in requests(4):
        if any(k not in SCENARIO_FIELDS and k not in compiled.params_fields for k in keywords):
            continue
        scenario, params = request_of(keywords, compiled.params_fields)
        try:
            expected = compiled.select(scenario, params)
        except Unrepresentable:
            continue
        chosen = shipped.select(scenario, params)
        assert (chosen, chosen.log) == (expected, expected.log), keywords
        compared += 1
    assert compared > 300


@pytest.mark.parametrize("version", ["2.18.0", "2.19.0"])
def test_verify_states_no_assumption_without_trees(version, release, no_trees, capsys):
    release(version)
    main(["verify", version])
    out = capsys.readouterr().out
    assert f"(TE {version})" in out and "assumed" not in out


def test_offline_with_nothing_cached_keeps_the_stated_assumption(
    release, no_trees, monkeypatch, tmp_path
):
    monkeypatch.setenv("TE_ATTN_GUARDS_CACHE", str(tmp_path / "empty-cache"))
    monkeypatch.setenv(te_lib.OFFLINE_VARIABLE, "1")
    loaded = load_selector(release("2.19.0"))
    assert loaded.fused_assumption == (
        "fused answer assumed: F16_arbitrary_seqlen"
        f" (no TE C++ for 2.19.0: {te_lib.OFFLINE_VARIABLE} is set)"
    )


def test_the_stubs_stay_in_the_helper_process(release, no_trees):
    assert load_selector(release("2.19.0")).select(Scenario()).backend
    this_process = ctypes.CDLL(None)
    for symbol in ("cudaGetDevice", "cudnnGetVersion", "nvte_get_fused_attn_backend"):
        assert not hasattr(this_process, symbol)


def test_a_wheel_without_headers_is_noted_and_never_fetched_again(monkeypatch, tmp_path):
    """Older wheels (cu12 2.8.0's) ship the library but no headers to call it through."""
    from selector_patch.te_lib import fetch

    monkeypatch.setenv("TE_ATTN_GUARDS_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv(te_lib.LIBRARIES_VARIABLE, raising=False)
    downloads = []

    def download(version, distribution, directory):
        downloads.append(distribution)
        directory.mkdir(parents=True, exist_ok=True)
        wheel = directory / "transformer_engine_cu12-9.9.9-py3-none-any.whl"
        with zipfile.ZipFile(wheel, "w") as archive:
            archive.writestr(f"transformer_engine/wheel_lib/{fetch.LIBRARY}", b"\x7fELF")
        return wheel

    monkeypatch.setattr(fetch, "_download", download)
    for _ in range(2):
        with pytest.raises(te_lib.Missing, match="ships no public headers"):
            fetch.library("9.9.9")
    assert downloads == list(fetch.DISTRIBUTIONS)  # each tried once, in the first call only
