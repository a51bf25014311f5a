class Graph:
    """Directed graph with string nodes."""

    def __init__(self):
        self.adj = {}

    def add_edge(self, a: str, b: str) -> None:
        self.adj.setdefault(a, []).append(b)
        self.adj.setdefault(b, [])

    def neighbours(self, a: str) -> list:
        return sorted(self.adj.get(a, []))
