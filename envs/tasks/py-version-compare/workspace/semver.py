def compare(a: str, b: str) -> int:
    raise NotImplementedError


def sort_versions(vs):
    raise NotImplementedError
