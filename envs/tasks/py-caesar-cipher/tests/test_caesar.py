from sandgym_harness import workspace

caesar = workspace.module("caesar")


def test_shift_basic():
    assert caesar.shift("abc", 1) == "bcd"


def test_wraps_and_case():
    assert caesar.shift("xyz XYZ", 3) == "abc ABC"


def test_negative_and_large():
    assert caesar.shift("Hello", -1) == "Gdkkn"
    assert caesar.shift("Hello", 27) == "Ifmmp"


def test_non_letters_untouched():
    assert caesar.shift("a1-b2_é!", 2) == "c1-d2_é!"


def test_roundtrip():
    s = "The Quick Brown Fox Jumps Over The Lazy Dog."
    assert caesar.shift(caesar.shift(s, 11), -11) == s


def test_crack():
    plain = "it is a truth universally acknowledged that a single man in possession of a good fortune"
    ks = [0, 3, 13, 25]
    ciphers = workspace.call_many(caesar.shift, [(plain, k) for k in ks])
    assert workspace.call_many(caesar.crack, [(c,) for c in ciphers]) == ks
