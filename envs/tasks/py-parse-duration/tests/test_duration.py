import pytest
from sandgym_harness import workspace

duration = workspace.module("duration")


@pytest.mark.parametrize("s,n", [("45s", 45), ("1h30m", 5400), ("2d", 172800), ("1w2d3h4m5s", 788645),
                                 (" 10m ", 600), ("90", 90), ("0s", 0)])
def test_parse(s, n):
    assert duration.parse_duration(s) == n


@pytest.mark.parametrize("s", ["", "1x", "m", "1m1h", "1h1h", "-5s", "1.5h", "1H", "h1"])
def test_parse_invalid(s):
    with pytest.raises(ValueError):
        duration.parse_duration(s)


@pytest.mark.parametrize("n,s", [(0, "0s"), (59, "59s"), (3600, "1h"), (788645, "1w2d3h4m5s"), (86460, "1d1m")])
def test_format(n, s):
    assert duration.format_duration(n) == s


def test_format_negative():
    with pytest.raises(ValueError):
        duration.format_duration(-1)
