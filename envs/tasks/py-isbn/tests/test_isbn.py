import pytest
from sandgym_harness import workspace

isbn = workspace.module("isbn")


@pytest.mark.parametrize("s", ["0-306-40615-2", "0306406152", "080442957X", "0-8044-2957-x",
                               "978-0-306-40615-7", "9780306406157", "978 3 16 148410 0"])
def test_valid(s):
    assert isbn.is_valid_isbn(s) is True


@pytest.mark.parametrize("s", ["0306406153", "9780306406158", "", "X306406152", "03064061521",
                               "978030640615X", "abcdefghij"])
def test_invalid(s):
    assert isbn.is_valid_isbn(s) is False


def test_convert():
    assert isbn.to_isbn13("0-306-40615-2") == "9780306406157"
    assert isbn.to_isbn13("080442957X") == "9780804429573"


def test_convert_invalid():
    with pytest.raises(ValueError):
        isbn.to_isbn13("0306406153")
