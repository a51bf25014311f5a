import pytest
from textstats.stats import average_word_length, words_per_sentence
from textstats.tokens import sentences, tokenize


def test_tokenize_contractions():
    assert tokenize("Don't stop, it's fine") == ["don't", "stop", "it's", "fine"]


def test_tokenize_quotes_not_words():
    assert tokenize("'hello' world''") == ["hello", "world"]


def test_sentences_basic():
    assert sentences("One. Two! Three?") == ["One", "Two", "Three"]


def test_sentences_decimals():
    assert sentences("Pi is 3.14 roughly. Yes.") == ["Pi is 3.14 roughly", "Yes"]


def test_sentences_ellipsis():
    assert sentences("Wait... What?!") == ["Wait", "What"]


def test_average_word_length_float():
    assert average_word_length("ab abc") == pytest.approx(2.5)


def test_average_word_length_empty():
    assert average_word_length("") == 0.0
    assert average_word_length("... !!!") == 0.0


def test_words_per_sentence():
    assert words_per_sentence("I can't go. You can.") == pytest.approx(2.5)
