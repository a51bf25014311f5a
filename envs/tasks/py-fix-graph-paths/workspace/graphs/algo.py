from collections import deque


def shortest_path(g, start: str, goal: str):
    """Fewest-edges path as a list of nodes from start to goal, or None if unreachable.
    Ties are broken by visiting neighbours in sorted order. start == goal gives [start]."""
    prev = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        if node == goal:
            path = [node]
            while node in prev and node != start:
                node = prev[node]
                path.append(node)
            return path
        for n in g.neighbours(node):
            if n not in prev:
                prev[n] = node
                queue.append(n)
    return None


def has_cycle(g) -> bool:
    """True when the directed graph contains a cycle (a self-loop counts)."""
    seen = set()

    def visit(n):
        if n in seen:
            return True
        seen.add(n)
        return any(visit(m) for m in g.neighbours(n))

    return any(visit(n) for n in list(g.adj))
