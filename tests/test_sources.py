"""TE source resolution: checkouts, files, the installed distribution, releases and the cache."""

from __future__ import annotations

import sys
import threading
import zipfile
from pathlib import Path

import pytest

from selector_patch import sources
from selector_patch.sources import (
    CORPUS_RELEASES,
    SELECTOR_PATHS,
    SelectorSource,
    SourceError,
    resolve,
)

SELECTOR_TEXT = "def get_attention_backend(attention_params=None):\n    return None\n"


def make_tree(root: Path, relative: str, *, version: str | None = "9.9.9") -> Path:
    """A minimal TE tree: one selector file and, optionally, wheel metadata."""
    path = root / relative
    path.parent.mkdir(parents=True)
    path.write_text(SELECTOR_TEXT)
    if version is not None:
        info = root / f"transformer_engine-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: transformer_engine\nVersion: {version}\n"
        )
        (info / "RECORD").write_text(f"{relative},,\n")
    return path


def make_wheel(directory: Path, version: str) -> Path:
    tree = directory / "tree"
    make_tree(tree, SELECTOR_PATHS[0], version=version)
    wheel = directory / f"transformer_engine-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for file in tree.rglob("*"):
            if file.is_file():
                archive.write(file, file.relative_to(tree).as_posix())
    return wheel


def test_corpus_is_the_29_releases_in_order():
    from packaging.version import Version

    assert len(CORPUS_RELEASES) == 29
    assert list(CORPUS_RELEASES) == sorted(CORPUS_RELEASES, key=Version)
    assert CORPUS_RELEASES[0] == "1.9.0.post1" and CORPUS_RELEASES[-1] == "2.20.2"


@pytest.mark.parametrize("relative", SELECTOR_PATHS)
def test_checkout_finds_each_layout(tmp_path, relative):
    path = make_tree(tmp_path, relative)
    source = resolve(str(tmp_path))
    assert source == SelectorSource(path, tmp_path, "9.9.9", "checkout")
    assert resolve(str(tmp_path / "transformer_engine")).path == path


def test_newest_layout_that_defines_the_selector_wins(tmp_path):
    """TE 2.2 ships both `attention.py` and `dot_product_attention/utils.py`."""
    make_tree(tmp_path, SELECTOR_PATHS[1])
    (tmp_path / SELECTOR_PATHS[2]).write_text("from .dot_product_attention import utils\n")
    assert resolve(str(tmp_path)).path == tmp_path / SELECTOR_PATHS[1]


def test_checkout_version_file(tmp_path):
    make_tree(tmp_path, SELECTOR_PATHS[0], version=None)
    (tmp_path / "build_tools").mkdir()
    (tmp_path / "build_tools" / "VERSION.txt").write_text("2.21.0.dev0\n")
    assert resolve(str(tmp_path)).te_version == "2.21.0.dev0"


def test_file_inside_a_tree_knows_its_root(tmp_path):
    path = make_tree(tmp_path, SELECTOR_PATHS[0])
    assert resolve(str(path)) == SelectorSource(path, tmp_path, "9.9.9", "file")


def test_bare_file(tmp_path):
    """A selector that shares too little with every release runs alone, saying what it lacks."""
    path = tmp_path / "fork_selector.py"
    path.write_text(SELECTOR_TEXT)
    source = resolve(str(path))
    assert source == SelectorSource(path, None, None, "file", assumption=source.assumption)
    assert source.assumption.startswith("no TE tree: no release's selector shares half its lines")
    assert "--te-version" in source.assumption and source.relative is None


@pytest.mark.parametrize("version", ["2.20.2", "2.15.0", "1.13.0"])
def test_a_release_selector_alone_is_placed_in_that_release(release, tmp_path, version):
    """`git show REV:path > upstream.py`: the very file, so the very release, nothing assumed."""
    tree = release(version)
    path = tmp_path / "upstream.py"
    path.write_bytes(tree.path.read_bytes())
    source = resolve(str(path))
    assert source == SelectorSource(path, tree.root, version, "file", placed=tree.path)
    assert source.position == tree.path and source.relative is None


def test_an_edited_selector_alone_is_placed_in_the_nearest_release_saying_so(release, tmp_path):
    tree = release("2.18.0")
    path = tmp_path / "fork.py"
    text = tree.path.read_text()
    path.write_text(text.replace("(9, 0)", "(9, 1)"))
    edited = sum("(9, 0)" in line for line in text.splitlines())
    source = resolve(str(path))
    assert (source.root, source.te_version, source.placed) == (tree.root, None, tree.path)
    assert source.assumption.startswith(
        f"TE tree assumed: 2.18.0's, the release nearest fork.py ({edited} of fork.py's lines"
    )


def test_the_release_of_a_file_alone_can_be_named(release, tmp_path):
    """`--te-version` first, then the `te-version` key of the file's project, then matching."""
    newest, older = release("2.20.2"), release("2.19.0")
    path = tmp_path / "upstream.py"
    path.write_bytes(newest.path.read_bytes())
    named = resolve(str(path), "2.19.0")
    assert (named.root, named.te_version, named.assumption) == (older.root, "2.19.0", None)
    (tmp_path / "pyproject.toml").write_text('[tool.te-attn-guards]\nte-version = "2.19.0"\n')
    assert resolve(str(path)).te_version == "2.19.0"
    assert resolve(str(path), "2.20.2").te_version == "2.20.2"
    (tmp_path / "pyproject.toml").write_text('[tool.te-attn-guards]\nte-version = "latest"\n')
    with pytest.raises(SourceError, match=r"upstream.py: te-version 'latest': not a TE version$"):
        resolve(str(path))


def test_installed_is_found_from_metadata_without_importing(tmp_path, monkeypatch):
    path = make_tree(tmp_path, SELECTOR_PATHS[0], version="2.99.0")
    (tmp_path / "transformer_engine" / "__init__.py").write_text("raise RuntimeError('imported')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert resolve("installed") == SelectorSource(path, tmp_path, "2.99.0", "installed")
    assert "transformer_engine" not in sys.modules


@pytest.mark.parametrize(
    ("spec", "cause"),
    [
        ("no/such/dir", "no such file or directory, and not `installed` or a TE version"),
        ("installed", "no transformer_engine distribution is installed"),
    ],
)
def test_errors_are_one_line(spec, cause):
    with pytest.raises(SourceError) as raised:
        resolve(spec)
    assert str(raised.value) == f"{spec}: {cause}"


def test_directory_without_selector(tmp_path):
    with pytest.raises(SourceError, match=r"^.*: no TE attention selector found \(looked for"):
        resolve(str(tmp_path))


def test_file_without_selector(tmp_path):
    path = tmp_path / "other.py"
    path.write_text("x = 1\n")
    with pytest.raises(SourceError) as raised:
        resolve(str(path))
    assert str(raised.value) == f"{path}: defines no get_attention_backend()"


@pytest.fixture
def fake_index(tmp_path, monkeypatch):
    """A private cache and a `pip download` that counts its calls and serves a fake wheel."""
    monkeypatch.setenv(sources.CACHE_VARIABLE, str(tmp_path / "cache"))
    calls = []

    def download(version, directory):
        calls.append(version)
        directory.mkdir(parents=True)
        return make_wheel(directory, version)

    monkeypatch.setattr(sources, "_download", download)
    return calls


def test_release_is_downloaded_once_and_reused(fake_index, tmp_path):
    first = resolve("9.9.9")
    second = resolve("9.9.9")
    assert first == second
    assert first.origin == "release" and first.te_version == "9.9.9"
    assert first.root == tmp_path / "cache" / "releases" / "9.9.9"
    assert fake_index == ["9.9.9"]


def test_concurrent_downloads_leave_one_complete_release(fake_index, tmp_path):
    barrier = threading.Barrier(4)
    results, errors = [], []

    def fetch():
        barrier.wait()
        try:
            results.append(resolve("9.9.8"))
        except Exception as error:  # reported below
            errors.append(error)

    threads = [threading.Thread(target=fetch) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(set(results)) == 1
    releases = tmp_path / "cache" / "releases"
    assert sorted(path.name for path in releases.iterdir()) == ["9.9.8"]


def test_failed_download_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv(sources.CACHE_VARIABLE, str(tmp_path))
    with pytest.raises(SourceError) as raised:
        resolve("0.0.0.dev999")
    message = str(raised.value)
    assert message.startswith("0.0.0.dev999: pip download failed: ") and "\n" not in message
    assert list((tmp_path / "releases").iterdir()) == []


def test_real_release(release):
    source = release("2.20.2")
    assert source.origin == "release" and source.te_version == "2.20.2"
    assert source.path == source.root / SELECTOR_PATHS[0]


def _sdist(path: Path, members: dict[str, str]) -> Path:
    """A gzipped tar of `members`: text files by name, and links written `-> target` (a name
    ending in `@` is a symbolic link, one ending in `=` a hard link)."""
    import io
    import tarfile

    with tarfile.open(path, "w:gz") as archive:
        for name, text in members.items():
            data = text.encode()
            info = tarfile.TarInfo(name.rstrip("@="))
            if name[-1] in "@=":
                info.type = tarfile.SYMTYPE if name.endswith("@") else tarfile.LNKTYPE
                info.linkname = text.removeprefix("-> ")
                data = b""
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path


@pytest.fixture(params=["filter", "no filter"])
def extraction(request, monkeypatch) -> None:
    """Each sdist test runs with tarfile's extraction filters, and as on a Python without them
    (before 3.11.4: Debian 12's 3.11.2), where `sources._data_members` does their work."""
    import tarfile

    if request.param == "no filter":
        monkeypatch.delattr(tarfile, "data_filter", raising=False)
    elif not hasattr(tarfile, "data_filter"):
        pytest.skip("this Python's tarfile has no extraction filters")


def test_an_sdist_unpacks_as_its_one_top_level_directory(tmp_path, extraction):
    sdist = _sdist(
        tmp_path / "pkg-1.0.tar.gz",
        {"pkg-1.0/setup.py": "", "pkg-1.0/src/a.h": "x", "pkg-1.0/src/b.h@": "-> a.h"},
    )
    sources._extract_sdist(sdist, tmp_path / "tree")
    assert (tmp_path / "tree" / "src" / "a.h").read_text() == "x"
    assert (tmp_path / "tree" / "src" / "b.h").read_text() == "x"


def test_an_archive_without_one_top_level_directory_is_a_one_line_error(tmp_path, extraction):
    sdist = _sdist(tmp_path / "odd.tar.gz", {"a/setup.py": "", "b/setup.py": ""})
    with pytest.raises(SourceError, match="not an sdist: it does not hold one top-level"):
        sources._extract_sdist(sdist, tmp_path / "tree")


@pytest.mark.parametrize(
    "member",
    [
        {"pkg-1.0/../../escaped": "x"},
        {"/tmp/escaped": "x"},
        {"pkg-1.0/escaped@": "-> ../../escaped"},
        {"pkg-1.0/escaped@": "-> /etc/passwd"},
        {"pkg-1.0/escaped=": "-> ../escaped"},
    ],
    ids=["dot-dot", "absolute", "symlink-up", "symlink-absolute", "hardlink-up"],
)
def test_a_member_reaching_outside_is_refused_and_nothing_written(tmp_path, extraction, member):
    sdist = _sdist(tmp_path / "evil.tar.gz", {"pkg-1.0/setup.py": "", **member})
    cache = tmp_path / "cache"
    cache.mkdir()
    with pytest.raises(SourceError, match="not an sdist: ") as raised:
        sources._extract_sdist(sdist, cache / "tree")
    assert "\n" not in str(raised.value)
    assert not (tmp_path / "escaped").exists() and list(cache.iterdir()) == []
