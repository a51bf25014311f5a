import pytest
from sandgym_harness import workspace

stats = workspace.module("textstats.stats")
tokens = workspace.module("textstats.tokens")


def test_tokenize_contractions():
    assert tokens.tokenize("Don't stop, it's fine") == ["don't", "stop", "it's", "fine"]


def test_tokenize_quotes_not_words():
    assert tokens.tokenize("'hello' world''") == ["hello", "world"]


def test_sentences_basic():
    assert tokens.sentences("One. Two! Three?") == ["One", "Two", "Three"]


def test_sentences_decimals():
    assert tokens.sentences("Pi is 3.14 roughly. Yes.") == ["Pi is 3.14 roughly", "Yes"]


def test_sentences_ellipsis():
    assert tokens.sentences("Wait... What?!") == ["Wait", "What"]


def test_average_word_length_float():
    assert stats.average_word_length("ab abc") == pytest.approx(2.5)


def test_average_word_length_empty():
    assert stats.average_word_length("") == 0.0
    assert stats.average_word_length("... !!!") == 0.0


def test_words_per_sentence():
    assert stats.words_per_sentence("I can't go. You can.") == pytest.approx(2.5)


@pytest.mark.parametrize("text,words", [
    ("Route 66 and PI=3.14", ["route", "66", "and", "pi", "3", "14"]),
    ("Rock'n'roll isn't DEAD", ["rock'n'roll", "isn't", "dead"]),
    ("the dogs' bones, 'tis", ["the", "dogs", "bones", "tis"]),
    ("", []),
    ("  ...  ", []),
    ("a-b c_d", ["a", "b", "c", "d"]),
])
def test_tokenize_more(text, words):
    assert tokens.tokenize(text) == words


@pytest.mark.parametrize("text,out", [
    ("Hello world", ["Hello world"]),
    ("One.\nTwo.\tThree", ["One", "Two", "Three"]),
    ("Cats, i.e., felines, purr. Dogs bark!", ["Cats, i.e., felines, purr", "Dogs bark"]),
    ("Version 2.0.1 shipped.", ["Version 2.0.1 shipped"]),
    ("Really?! Yes!!!  No.", ["Really", "Yes", "No"]),
    ("", []),
    ("   ", []),
    ("... !? .", []),
])
def test_sentences_more(text, out):
    assert tokens.sentences(text) == out


@pytest.mark.parametrize("text,avg", [("I am", 1.5), ("don't", 5.0), ("a bb ccc dddd", 2.5), ("Hello.", 5.0),
                                      ("x", 1.0), ("ab, 1234 c", 7 / 3)])
def test_average_word_length_more(text, avg):
    got = stats.average_word_length(text)
    assert type(got) is float
    assert got == pytest.approx(avg)


@pytest.mark.parametrize("text,wps", [("", 0.0), ("   ", 0.0), ("... ?!", 0.0), ("One two three", 3.0),
                                      ("Hi! How are you?", 2.0), ("A b. C d e f. G h i j k.", 11 / 3),
                                      ("Pi is 3.14 roughly. Yes.", 3.0)])
def test_words_per_sentence_more(text, wps):
    got = stats.words_per_sentence(text)
    assert type(got) is float
    assert got == pytest.approx(wps)
