# WRONG: words_per_sentence("") raises ZeroDivisionError instead of returning 0.0.
from .tokens import sentences, tokenize


def average_word_length(text: str) -> float:
    """Mean length of the words; 0.0 for a text without words."""
    words = tokenize(text)
    if not words:
        return 0.0
    return sum(len(w) for w in words) / len(words)


def words_per_sentence(text: str) -> float:
    """Mean number of words per sentence; 0.0 when there is no sentence."""
    return len(tokenize(text)) / len(sentences(text))
