from caesar import crack, shift


def test_shift_basic():
    assert shift("abc", 1) == "bcd"


def test_wraps_and_case():
    assert shift("xyz XYZ", 3) == "abc ABC"


def test_negative_and_large():
    assert shift("Hello", -1) == "Gdkkn"
    assert shift("Hello", 27) == "Ifmmp"


def test_non_letters_untouched():
    assert shift("a1-b2_é!", 2) == "c1-d2_é!"


def test_roundtrip():
    s = "The Quick Brown Fox Jumps Over The Lazy Dog."
    assert shift(shift(s, 11), -11) == s


def test_crack():
    plain = "it is a truth universally acknowledged that a single man in possession of a good fortune"
    for k in (0, 3, 13, 25):
        assert crack(shift(plain, k)) == k
