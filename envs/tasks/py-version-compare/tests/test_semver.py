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
