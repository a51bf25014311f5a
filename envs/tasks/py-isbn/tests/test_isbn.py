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


@pytest.mark.parametrize("s", ["0471958700", "316148410X", "9783161484100", "979-10-00000-00-8",
                               "9781861972712"])
def test_valid_check_digits_0_and_x(s):
    # check characters 0 and X, and a 979 prefix: the ends of the check-digit arithmetic
    assert isbn.is_valid_isbn(s) is True


@pytest.mark.parametrize("s", ["X00000000X", "03064061X2", "030640615A", "030640615-", "97803064061X7", "0.306406152", "0306406152.",
                               "978-0-306-40615", "97803064061570", "030640615", "978-0-306-40615-x"])
def test_invalid_shapes(s):
    # X only as the ISBN-10 check character (even when the weighted sum would work), digits only
    # elsewhere, only hyphens and spaces ignored, exactly 10 or 13 characters
    assert isbn.is_valid_isbn(s) is False


def test_convert_check_digit_0_and_separators():
    assert isbn.to_isbn13("0 306 40614 4") == "9780306406140"
    assert isbn.to_isbn13("316148410X") == "9783161484100"
    assert isbn.to_isbn13("0-471-95870-0") == "9780471958703"


@pytest.mark.parametrize("s", ["9780306406157", "", "X00000000X", "030640615"])
def test_convert_rejects_non_isbn10(s):
    # an ISBN-13, even a valid one, is not a valid ISBN-10
    with pytest.raises(ValueError):
        isbn.to_isbn13(s)
