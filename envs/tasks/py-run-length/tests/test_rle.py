import pytest
from rle import decode, encode


def test_encode_simple():
    assert encode("aaabcc") == "3ab2c"


def test_encode_empty():
    assert encode("") == ""
    assert decode("") == ""


def test_long_runs():
    assert encode("a" * 12 + "b") == "12ab"
    assert decode("12ab") == "a" * 12 + "b"


def test_spaces_and_punct():
    s = "  !!!x  "
    assert encode(s) == "2 3!x2 "
    assert decode(encode(s)) == s


def test_decode_simple():
    assert decode("3ab2c") == "aaabcc"


@pytest.mark.parametrize("s", ["abc", "zzzzzzzzzzzzzzzzzzzz", "a-b--c---", "ééé ü"])
def test_roundtrip(s):
    assert decode(encode(s)) == s


@pytest.mark.parametrize("bad", ["3", "ab4", "0a"])
def test_decode_malformed(bad):
    with pytest.raises(ValueError):
        decode(bad)
