import pytest
from duration import format_duration, parse_duration


@pytest.mark.parametrize("s,n", [("45s", 45), ("1h30m", 5400), ("2d", 172800), ("1w2d3h4m5s", 788645),
                                 (" 10m ", 600), ("90", 90), ("0s", 0)])
def test_parse(s, n):
    assert parse_duration(s) == n


@pytest.mark.parametrize("s", ["", "1x", "m", "1m1h", "1h1h", "-5s", "1.5h", "1H", "h1"])
def test_parse_invalid(s):
    with pytest.raises(ValueError):
        parse_duration(s)


@pytest.mark.parametrize("n,s", [(0, "0s"), (59, "59s"), (3600, "1h"), (788645, "1w2d3h4m5s"), (86460, "1d1m")])
def test_format(n, s):
    assert format_duration(n) == s


def test_format_negative():
    with pytest.raises(ValueError):
        format_duration(-1)
