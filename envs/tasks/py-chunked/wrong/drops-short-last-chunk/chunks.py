# WRONG: the zip(*[iter(it)] * n) idiom: a shorter last chunk is silently dropped
import collections


def _check(n):
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError("n must be a positive integer")


def chunked(iterable, n: int):
    _check(n)
    it = iter(iterable)
    return (list(block) for block in zip(*[it] * n))


def sliding(iterable, n: int):
    _check(n)

    def gen():
        window = collections.deque(maxlen=n)
        for x in iterable:
            window.append(x)
            if len(window) == n:
                yield tuple(window)

    return gen()
