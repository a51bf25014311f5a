import pytest
from sandgym_harness import workspace

rle = workspace.module("rle")


def test_encode_simple():
    assert rle.encode("aaabcc") == "3ab2c"


def test_encode_empty():
    assert rle.encode("") == ""
    assert rle.decode("") == ""


def test_long_runs():
    assert rle.encode("a" * 12 + "b") == "12ab"
    assert rle.decode("12ab") == "a" * 12 + "b"


def test_spaces_and_punct():
    s = "  !!!x  "
    assert rle.encode(s) == "2 3!x2 "
    assert rle.decode(rle.encode(s)) == s


def test_decode_simple():
    assert rle.decode("3ab2c") == "aaabcc"


@pytest.mark.parametrize("s", ["abc", "zzzzzzzzzzzzzzzzzzzz", "a-b--c---", "ééé ü"])
def test_roundtrip(s):
    assert rle.decode(rle.encode(s)) == s


@pytest.mark.parametrize("bad", ["3", "ab4", "0a"])
def test_decode_malformed(bad):
    with pytest.raises(ValueError):
        rle.decode(bad)
