# WRONG: uses str.isalpha()/isupper(), so non-ASCII letters such as "é" are shifted too.
def shift(text: str, k: int) -> str:
    out = []
    for ch in text:
        if ch.isalpha():
            base = 65 if ch.isupper() else 97
            out.append(chr((ord(ch) - base + k) % 26 + base))
        else:
            out.append(ch)
    return "".join(out)


def crack(ciphertext: str) -> int:
    def score(k):
        plain = shift(ciphertext, -k).lower()
        return sum(plain.count(c) for c in "etaoin")
    return max(range(26), key=lambda k: (score(k), -k))
