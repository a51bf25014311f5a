# WRONG: on a tie crack keeps the last best shift (>=) instead of the smallest one.
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
    best, best_score = 0, -1
    for k in range(26):
        plain = shift(ciphertext, -k).lower()
        score = sum(plain.count(c) for c in "etaoin")
        if score >= best_score:
            best, best_score = k, score
    return best
