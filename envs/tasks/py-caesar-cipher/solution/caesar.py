def shift(text: str, k: int) -> str:
    out = []
    for ch in text:
        if "a" <= ch <= "z":
            out.append(chr((ord(ch) - 97 + k) % 26 + 97))
        elif "A" <= ch <= "Z":
            out.append(chr((ord(ch) - 65 + k) % 26 + 65))
        else:
            out.append(ch)
    return "".join(out)


def crack(ciphertext: str) -> int:
    def score(k):
        plain = shift(ciphertext, -k).lower()
        return sum(plain.count(c) for c in "etaoin")
    return max(range(26), key=lambda k: (score(k), -k))
