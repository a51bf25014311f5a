# WRONG: fill_spiral builds a cols x rows matrix (the two dimensions swapped)
def _order(rows, cols):
    top, bottom, left, right = 0, rows - 1, 0, cols - 1
    while top <= bottom and left <= right:
        for c in range(left, right + 1):
            yield top, c
        for r in range(top + 1, bottom + 1):
            yield r, right
        if top < bottom:
            for c in range(right - 1, left - 1, -1):
                yield bottom, c
        if left < right:
            for r in range(bottom - 1, top, -1):
                yield r, left
        top, bottom, left, right = top + 1, bottom - 1, left + 1, right - 1


def spiral(matrix):
    if not matrix:
        return []
    cols = len(matrix[0])
    if any(len(r) != cols for r in matrix):
        raise ValueError("ragged matrix")
    return [matrix[r][c] for r, c in _order(len(matrix), cols)]


def fill_spiral(rows, cols):
    m = [[0] * rows for _ in range(cols)]
    for i, (r, c) in enumerate(_order(cols, rows), start=1):
        m[r][c] = i
    return m
