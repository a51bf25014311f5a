from sandgym_harness import workspace

words = workspace.module("words")


def test_counts_and_order():
    text = "the cat and the hat and the bat"
    assert words.top_words(text, 2) == [("the", 3), ("and", 2)]


def test_ties_alphabetical():
    assert words.top_words("b a c b a c", 3) == [("a", 2), ("b", 2), ("c", 2)]


def test_case_insensitive():
    assert words.top_words("Dog dog DOG cat", 1) == [("dog", 3)]


def test_apostrophes():
    assert words.top_words("don't 'tis don't tis'", 2) == [("don't", 2), ("tis", 2)]


def test_fewer_than_k():
    assert words.top_words("one two", 5) == [("one", 1), ("two", 1)]


def test_k_zero_and_negative():
    assert words.top_words("a b c", 0) == []
    assert words.top_words("a b c", -1) == []


def test_digits_and_punctuation_split():
    assert words.top_words("x1x, x-x; y", 3) == [("x", 4), ("y", 1)]


def test_empty():
    assert words.top_words("", 3) == []


def test_non_ascii_letters_split_words():
    # only ASCII letters (and apostrophes) form words: "é" and "ï" separate them
    assert words.top_words("café naïve CAF", 5) == [("caf", 2), ("na", 1), ("ve", 1)]


def test_lone_apostrophes_are_not_words():
    assert words.top_words("' '' don't '''", 5) == [("don't", 1)]


def test_ties_alphabetical_not_first_seen():
    text = "zeta yak xray yak zeta xray wolf"
    assert words.top_words(text, 4) == [("xray", 2), ("yak", 2), ("zeta", 2), ("wolf", 1)]
    assert words.top_words(text, 2) == [("xray", 2), ("yak", 2)]
