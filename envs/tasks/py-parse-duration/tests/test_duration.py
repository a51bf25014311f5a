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


@pytest.mark.parametrize("s,n", [("1w", 604800), ("1d", 86400), ("1h", 3600), ("1m", 60), ("1s", 1), ("0", 0),
                                 ("3w1s", 1814401), ("1d1m", 86460), ("2h2s", 7202), ("100m", 6000),
                                 ("\t1w1d\n", 691200), ("86400", 86400)])
def test_parse_each_unit(s, n):
    assert duration.parse_duration(s) == n


@pytest.mark.parametrize("s", ["   ", "1d1w", "1s1m", "1s1s", "1ms", "w", "1W", "1D", "1M", "1S", "1h30",
                               "h", "s1", "1h-5m", "+5", "5.0"])
def test_parse_invalid_more(s):
    with pytest.raises(ValueError):
        duration.parse_duration(s)


@pytest.mark.parametrize("n,s", [(1, "1s"), (60, "1m"), (86400, "1d"), (604800, "1w"), (1209600, "2w"),
                                 (3599, "59m59s"), (604799, "6d23h59m59s"), (6048000, "10w"), (3601, "1h1s"),
                                 (90061, "1d1h1m1s")])
def test_format_more(n, s):
    assert duration.format_duration(n) == s


def test_format_negative_more():
    for n in (-60, -604800):
        with pytest.raises(ValueError):
            duration.format_duration(n)


def test_roundtrip():
    ns = list(range(0, 200)) + [59 * k + 3600 * (k % 5) + 86400 * (k % 9) + 604800 * (k % 3) for k in range(300)]
    texts = workspace.call_many(duration.format_duration, [(n,) for n in ns])
    assert workspace.call_many(duration.parse_duration, [(t,) for t in texts]) == ns
