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


def test_counts_with_zero_digits():
    # a 0 inside a multi-digit count is fine; only a count equal to 0 is malformed
    assert rle.encode("a" * 10 + "b" * 100 + "c") == "10a100bc"
    assert rle.decode("10a100bc") == "a" * 10 + "b" * 100 + "c"


def test_whitespace_and_control_characters():
    s = "\n\n\t x\r\r\r"
    assert rle.encode(s) == "2\n\t x3\r"
    assert rle.decode("2\n\t x3\r") == s


@pytest.mark.parametrize("bad", ["00a", "a0b", "2a3"])
def test_decode_malformed_more(bad):
    with pytest.raises(ValueError):
        rle.decode(bad)
