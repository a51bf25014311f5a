def parse_duration(s: str) -> int:
    raise NotImplementedError


def format_duration(seconds: int) -> str:
    raise NotImplementedError
