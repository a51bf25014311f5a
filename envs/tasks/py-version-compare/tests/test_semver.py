import pytest
from sandgym_harness import workspace

semver = workspace.module("semver")


@pytest.mark.parametrize("a,b,r", [
    ("1.0.0", "2.0.0", -1), ("2.1.0", "2.0.9", 1), ("1.10.0", "1.9.0", 1), ("1.0.0", "1.0.0", 0),
    ("1.0.0-alpha", "1.0.0", -1), ("1.0.0-alpha", "1.0.0-alpha.1", -1), ("1.0.0-alpha.1", "1.0.0-alpha.beta", -1),
    ("1.0.0-beta.2", "1.0.0-beta.11", -1), ("1.0.0-rc.1", "1.0.0-beta.11", 1), ("1.0.0+build.5", "1.0.0", 0),
])
def test_compare(a, b, r):
    assert semver.compare(a, b) == r
    assert semver.compare(b, a) == -r


@pytest.mark.parametrize("v", ["1.0", "1.0.0.0", "01.0.0", "1.0.0-", "1.0.0-a..b", "a.b.c", ""])
def test_invalid(v):
    with pytest.raises(ValueError):
        semver.compare(v, "1.0.0")


def test_sort():
    vs = ["1.0.0", "1.0.0-rc.1", "0.9.0", "1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-beta.2", "1.0.0-beta.11"]
    assert semver.sort_versions(vs) == ["0.9.0", "1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-beta.2", "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0"]


# The precedence chain of the semver 2.0.0 spec (section 11) plus core-number and identifier edge cases:
# every adjacent pair, both ways round.
CHAIN = ["0.0.0", "0.0.9", "0.0.10", "0.1.0", "0.9.9", "1.0.0-0", "1.0.0-2", "1.0.0-10", "1.0.0--", "1.0.0-Beta",
         "1.0.0-a10", "1.0.0-a9", "1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.a", "1.0.0-alpha.beta",
         "1.0.0-beta", "1.0.0-beta.2", "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0-rc.1.0", "1.0.0", "1.0.1-alpha",
         "1.0.1", "1.2.3", "1.2.10", "1.10.0", "9.9.9", "10.0.0"]


@pytest.mark.parametrize("i", range(len(CHAIN) - 1))
def test_precedence_chain(i):
    lo, hi = CHAIN[i], CHAIN[i + 1]
    assert semver.compare(lo, hi) == -1, f"{lo} < {hi}"
    assert semver.compare(hi, lo) == 1, f"{hi} > {lo}"


@pytest.mark.parametrize("a,b", [("1.0.0-rc.1+b1", "1.0.0-rc.1+b2"), ("1.0.0-x-y.7", "1.0.0-x-y.7"),
                                 ("0.0.0", "0.0.0+001"), ("1.0.0+exp.sha.5114f85", "1.0.0+21AF26D3--117B344092BD")])
def test_equal_precedence(a, b):
    assert semver.compare(a, b) == 0
    assert semver.compare(b, a) == 0


@pytest.mark.parametrize("v", ["1.0.0-0a", "1.0.0-alpha.0", "1.0.0-0.0", "1.0.0--", "1.0.0-a-.b-c", "1.0.0+001"])
def test_valid_edge_versions(v):
    assert semver.compare(v, v) == 0


@pytest.mark.parametrize("v", ["1.00.0", "1.0.01", "1.0.0-01", "1.0.0-alpha.007", "1.0.0+",
                               "1.0.0-a+", "v1.0.0", " 1.0.0", "1.0.0 ", "1.0.0-a b", "1.0.0-a_b", "-1.0.0",
                               "1..0", "1.0.0-.a", "1.0.0-a.", "1.0.x"])
def test_invalid_more(v):
    with pytest.raises(ValueError):
        semver.compare("1.0.0", v)


def test_sort_stable_and_empty():
    assert semver.sort_versions([]) == []
    vs = ["2.0.0", "1.0.0+b", "1.0.0-rc.1", "1.0.0+a", "1.0.0", "0.1.0"]
    assert semver.sort_versions(vs) == ["0.1.0", "1.0.0-rc.1", "1.0.0+b", "1.0.0+a", "1.0.0", "2.0.0"]
