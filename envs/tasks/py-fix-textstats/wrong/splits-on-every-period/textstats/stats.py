from .tokens import sentences, tokenize


def average_word_length(text: str) -> float:
    """Mean length of the words; 0.0 for a text without words."""
    words = tokenize(text)
    if not words:
        return 0.0
    return sum(len(w) for w in words) / len(words)


def words_per_sentence(text: str) -> float:
    """Mean number of words per sentence; 0.0 when there is no sentence."""
    ss = sentences(text)
    if not ss:
        return 0.0
    return len(tokenize(text)) / len(ss)
