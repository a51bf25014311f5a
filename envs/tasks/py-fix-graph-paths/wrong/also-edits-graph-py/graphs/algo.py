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
    WHITE, GREY, BLACK = 0, 1, 2
    colour = {n: WHITE for n in g.adj}

    def visit(n):
        colour[n] = GREY
        for m in g.neighbours(n):
            if colour[m] == GREY:
                return True
            if colour[m] == WHITE and visit(m):
                return True
        colour[n] = BLACK
        return False

    return any(colour[n] == WHITE and visit(n) for n in list(g.adj))
