# WRONG: has_cycle tracks only the nodes on the current path, never the finished ones, so it re-explores
# shared descendants: right answers, but exponential time on a chain of diamonds.
from collections import deque


def shortest_path(g, start: str, goal: str):
    """Fewest-edges path as a list of nodes from start to goal, or None if unreachable.
    Ties are broken by visiting neighbours in sorted order. start == goal gives [start]."""
    prev = {start: None}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        if node == goal:
            path = []
            while node is not None:
                path.append(node)
                node = prev[node]
            return path[::-1]
        for n in g.neighbours(node):
            if n not in prev:
                prev[n] = node
                queue.append(n)
    return None


def has_cycle(g) -> bool:
    """True when the directed graph contains a cycle (a self-loop counts)."""

    def visit(n, path):
        if n in path:
            return True
        path.add(n)
        found = any(visit(m, path) for m in g.neighbours(n))
        path.discard(n)
        return found

    return any(visit(n, set()) for n in list(g.adj))
