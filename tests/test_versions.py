"""`selector_patch.versions` orders versions as `packaging` does, reading plain ones itself."""

import itertools
import subprocess
import sys

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from selector_patch.versions import (
    PlainVersion,
    compare,
    is_version,
    order,
    satisfies,
    pkg_version,
    valid,
)

#: Plain releases (read here) and other spellings (left to packaging), mixed.
SPELLINGS = [
    "0", "0.0", "1", "1.0", "1.0.0", "2.1.1", "2.01.1", "2.6.3", "2.7.3", "2.7.4.post1",
    "2.8.4", "2.6.0.post1", "2.6.0.post2", "2.6.0.post10", "2.6.1", "2.6", "4.0.0rc1.post1",
    "1.0.post", "4.0.0a1", "4.0.0b5", "4.0.0b31", "4.0.0b36", "4.0.0rc1", "4.0.0", "4.0.0.dev1",
    "4.0.0beta36", "4.0.0B31", "1!0.1", "4.0.0+local", "10.0", "1.0a", "1.0rc", "1.0c1",
]  # fmt: skip


@pytest.mark.parametrize(("a", "b"), list(itertools.product(SPELLINGS, repeat=2)))
def test_compare_is_packaging_order(a, b):
    expected = (Version(a) > Version(b)) - (Version(a) < Version(b))
    assert compare(a, b) == expected


def test_order_sorts_as_packaging_does():
    assert sorted(SPELLINGS, key=order) == sorted(SPELLINGS, key=Version)


@pytest.mark.parametrize(
    "text",
    [*SPELLINGS, "", "x", "1..2", ".1", "1.", "4.0.0b", "v", "1.0-", "a1", "1.0b1b2", "1.0rc1a"]
    + ["1.0.postx", "1.0.post1.post2", ".post1", "1.0.post\u0661"]
    + ["1.0c1", "1.0pre1", "\u0661.\u0660", "1.0\u00b2", "1.0a\u0661"],
)
def test_valid_is_packaging_validity(text):
    try:
        Version(text)
    except InvalidVersion:
        expected = False
    else:
        expected = True
    assert valid(text) == expected


def test_an_invalid_version_raises_as_packaging_does():
    with pytest.raises(InvalidVersion):
        compare("4.0.0", "not a version")


@pytest.mark.parametrize(("a", "b"), list(itertools.product(SPELLINGS, repeat=2)))
def test_a_version_compares_as_packagings_does(a, b):
    """Plain or not, against one of its kind or the other."""
    mine, theirs, expected = pkg_version(a), pkg_version(b), (Version(a), Version(b))
    for left, right in ((mine, theirs), (mine, expected[1]), (expected[0], theirs)):
        assert (left < right, left <= right, left == right, left != right) == (
            expected[0] < expected[1],
            expected[0] <= expected[1],
            expected[0] == expected[1],
            expected[0] != expected[1],
        )
        assert (left > right, left >= right) == (
            expected[0] > expected[1],
            expected[0] >= expected[1],
        )


#: What a selector could ask of a version.
ATTRIBUTES = (
    "epoch", "release", "pre", "post", "dev", "local", "public", "base_version", "is_prerelease",
    "is_postrelease", "is_devrelease", "major", "minor", "micro",
)  # fmt: skip


@pytest.mark.parametrize("text", SPELLINGS)
def test_a_version_is_packagings_where_it_is_not_plain_and_reads_alike(text):
    made, expected = pkg_version(text), Version(text)
    assert is_version(made) and type(made) is (PlainVersion if valid_plain(text) else Version)
    assert (str(made), repr(made)) == (str(expected), repr(expected))
    assert [getattr(made, name) for name in ATTRIBUTES] == [
        getattr(expected, name) for name in ATTRIBUTES
    ]
    if valid_plain(text):  # equal plain releases hash alike (`1.0`, `1.0.0`)
        equal = [other for other in SPELLINGS if valid_plain(other) and Version(other) == expected]
        assert {hash(pkg_version(other)) for other in equal} == {hash(made)}


def valid_plain(text: str) -> bool:
    try:
        PlainVersion(text)
    except ValueError:
        return False
    return True


def test_a_flash_version_orders_against_either_kind():
    from lint_plugin.engine.dispatch import FlashVersion

    pinned = FlashVersion("FA4", True, "4.0.0b31")
    assert pinned < pkg_version("4.0.0b36") and pinned < Version("4.0.0b36")
    assert pinned >= pkg_version("4.0.0b") and not pinned < pkg_version("4.0.0a1")


def test_plain_releases_do_not_import_packaging():
    """Nor does a TE release judged against a TE fix's specifier (`TeFix.makes`)."""
    code = (
        "import sys; from selector_patch.versions import compare, satisfies, valid;"
        " assert compare('4.0.0b36', '4.0.0') < 0 and valid('2.8.4');"
        " assert compare('2.6.0.post1', '2.6.0') > 0 and compare('2.6.0.post1', '2.6.1') < 0;"
        " assert satisfies('2.20.2', '>=2.2,!=2.4.*') and not satisfies('2.5.0', '!=2.5.*');"
        " from selector_patch.versions import pkg_version;"
        " assert pkg_version('2.4') == pkg_version('2.4.0') < pkg_version('2.7.4.post1');"
        " print('packaging.version' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


#: Specifiers as TE's fixes write them (`TeFix.te_reachable`), and others left to packaging.
SPECIFIERS = [
    ">=2.2,!=2.4.*,!=2.5.*,!=2.6.*,!=2.7.*", ">=2.1", "==2.4.*", "!=2.0.*", "<=2.6.0.post1",
    "==2.6", "!=2.6.0", ">=4.0.0b31", "<2.5", ">2.5", "~=2.4", "===2.4", "==2.4.0+local",
    " >= 2.2 , != 2.4.* ",
]  # fmt: skip


@pytest.mark.parametrize(
    ("version", "specifier"),
    list(itertools.product(SPELLINGS[:-5] + ["2.4.0rc1", "2.5", "2", "2.0.0"], SPECIFIERS)),
)
def test_satisfies_is_packaging_containment(version, specifier):
    expected = Version(version) in SpecifierSet(specifier, prereleases=True)
    assert satisfies(version, specifier) == expected
