# WRONG: generator functions: n is only checked when iteration starts, not when chunked()/sliding() is called
import collections
import itertools


def chunked(iterable, n: int):
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError("n must be a positive integer")
    it = iter(iterable)
    while True:
        block = list(itertools.islice(it, n))
        if not block:
            return
        yield block


def sliding(iterable, n: int):
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError("n must be a positive integer")
    window = collections.deque(maxlen=n)
    for x in iterable:
        window.append(x)
        if len(window) == n:
            yield tuple(window)
