import pytest
from sandgym_harness import workspace

roman = workspace.module("roman")          # lazy: nothing runs until a test uses it

CASES = [(1, "I"), (4, "IV"), (9, "IX"), (14, "XIV"), (40, "XL"), (90, "XC"), (400, "CD"),
         (1994, "MCMXCIV"), (2024, "MMXXIV"), (3999, "MMMCMXCIX")]


@pytest.mark.parametrize("n,s", CASES)
def test_to_roman(n, s):
    assert roman.to_roman(n) == s


@pytest.mark.parametrize("n,s", CASES)
def test_from_roman(n, s):
    assert roman.from_roman(s) == n


def test_roundtrip_all():
    ns = list(range(1, 4000))
    romans = workspace.call_many(roman.to_roman, [(n,) for n in ns])     # one round trip, not 3999
    assert all(isinstance(s, str) for s in romans), "to_roman must return str"
    assert workspace.call_many(roman.from_roman, [(s,) for s in romans]) == ns, "from_roman(to_roman(n)) != n"


@pytest.mark.parametrize("n", [0, -1, 4000])
def test_to_roman_range(n):
    with pytest.raises(ValueError):
        roman.to_roman(n)


@pytest.mark.parametrize("n", [1.0, "5", True])
def test_to_roman_type(n):
    with pytest.raises(TypeError):
        roman.to_roman(n)


@pytest.mark.parametrize("s", ["", "iv", "IIII", "VX", "IC", "MMMM", "ABC"])
def test_from_roman_invalid(s):
    with pytest.raises(ValueError):
        roman.from_roman(s)


# every symbol on its own and in additive runs (no earlier case uses V, L, D or a lone C/M)
SYMBOL_CASES = [(3, "III"), (5, "V"), (8, "VIII"), (10, "X"), (49, "XLIX"), (50, "L"), (99, "XCIX"),
                (100, "C"), (444, "CDXLIV"), (500, "D"), (999, "CMXCIX"), (1000, "M"), (1666, "MDCLXVI"),
                (3888, "MMMDCCCLXXXVIII")]


@pytest.mark.parametrize("n,s", SYMBOL_CASES)
def test_every_symbol(n, s):
    assert roman.to_roman(n) == s
    assert roman.from_roman(s) == n


@pytest.mark.parametrize("s", ["VV", "LL", "DD", "IIV", "XM", "IL", "VIV", "CMM", "MCMC", "XCX", "IIX",
                               "DM", "LC", "VX", " X", "X ", "MMMCMXCX"])
def test_from_roman_non_canonical(s):
    with pytest.raises(ValueError):
        roman.from_roman(s)


@pytest.mark.parametrize("v", [5, None, ["I"]])
def test_from_roman_non_string(v):
    with pytest.raises(ValueError):
        roman.from_roman(v)
