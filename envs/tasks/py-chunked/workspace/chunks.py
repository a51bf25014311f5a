def chunked(iterable, n: int):
    raise NotImplementedError


def sliding(iterable, n: int):
    raise NotImplementedError
