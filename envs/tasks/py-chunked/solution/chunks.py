import collections
import itertools


def _check(n):
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError("n must be a positive integer")


def chunked(iterable, n: int):
    _check(n)

    def gen():
        it = iter(iterable)
        while True:
            block = list(itertools.islice(it, n))
            if not block:
                return
            yield block

    return gen()


def sliding(iterable, n: int):
    _check(n)

    def gen():
        window = collections.deque(maxlen=n)
        for x in iterable:
            window.append(x)
            if len(window) == n:
                yield tuple(window)

    return gen()
