# WRONG: sliding() copies the whole input into a list first: never returns on an infinite iterator
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
    items = list(iterable)
    return (tuple(items[i:i + n]) for i in range(len(items) - n + 1))
