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
