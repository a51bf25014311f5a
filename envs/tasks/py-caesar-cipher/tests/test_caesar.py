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


LOWER = "abcdefghijklmnopqrstuvwxyz"
UPPER = LOWER.upper()


def _shift_oracle(text, k):
    k %= 26
    table = str.maketrans(LOWER + UPPER, LOWER[k:] + LOWER[:k] + UPPER[k:] + UPPER[:k])
    return text.translate(table)


def test_every_shift_of_both_alphabets():
    text = LOWER + " " + UPPER
    ks = list(range(-60, 61)) + [1000, -1000, 2 ** 40 + 3]
    got = workspace.call_many(caesar.shift, [(text, k) for k in ks])
    assert got == [_shift_oracle(text, k) for k in ks]


def test_identity_shifts():
    s = "Zebra-Apple, zz AA!"
    for k in (0, 26, -26, 52):
        assert caesar.shift(s, k) == s


def test_neighbours_of_letters_untouched():
    # The characters just outside a-z and A-Z in ASCII, and non-ASCII letters.
    s = "`{@[ 09\t\n~ éßÉΩжı"
    assert workspace.call_many(caesar.shift, [(s, k) for k in (1, 5, 13, 25, -3)]) == [s] * 5
    assert caesar.shift("", 7) == ""


def _crack_oracle(text):
    def score(k):
        p = _shift_oracle(text, -k).lower()
        return sum(p.count(c) for c in "etaoin")
    best = 0
    for k in range(26):
        if score(k) > score(best):
            best = k
    return best


def test_crack_every_shift_and_case():
    plain = "It is a truth universally acknowledged, that a single man in possession of a good fortune"
    texts = [_shift_oracle(p, k) for k in range(26) for p in (plain, plain.upper())]
    assert workspace.call_many(caesar.crack, [(t,) for t in texts]) == [k for k in range(26) for _ in (0, 1)]


def test_crack_ties_take_smallest_shift():
    assert caesar.crack("") == 0
    assert caesar.crack("123 !?") == 0
    # "f" decrypts to an etaoin letter at shifts 1 (e), 5 (a), 12 (t), 17 (o), 23 (i) and 18 (n).
    assert caesar.crack("f") == 1


def test_crack_random_texts():
    import random
    rng = random.Random(7)
    alphabet = LOWER + UPPER + "  .,"
    texts = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30))) for _ in range(200)]
    assert workspace.call_many(caesar.crack, [(t,) for t in texts]) == [_crack_oracle(t) for t in texts]
