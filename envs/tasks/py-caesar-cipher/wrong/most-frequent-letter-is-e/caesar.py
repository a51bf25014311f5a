# WRONG: crack assumes the most frequent ciphertext letter is "e" instead of scoring "etaoin".
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
    letters = [c for c in ciphertext.lower() if "a" <= c <= "z"]
    if not letters:
        return 0
    top = max(sorted(set(letters)), key=letters.count)
    return (ord(top) - ord("e")) % 26
