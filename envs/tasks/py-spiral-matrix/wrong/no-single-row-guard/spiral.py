# WRONG: walks the bottom row and left column back even when only one row or column is left (repeats elements)
def spiral(matrix):
    if not matrix or not matrix[0]:
        if any(matrix):
            raise ValueError("ragged matrix")
        return []
    cols = len(matrix[0])
    if any(len(r) != cols for r in matrix):
        raise ValueError("ragged matrix")
    out = []
    top, bottom, left, right = 0, len(matrix) - 1, 0, cols - 1
    while top <= bottom and left <= right:
        out.extend(matrix[top][c] for c in range(left, right + 1))
        out.extend(matrix[r][right] for r in range(top + 1, bottom + 1))
        out.extend(matrix[bottom][c] for c in range(right - 1, left - 1, -1))
        out.extend(matrix[r][left] for r in range(bottom - 1, top, -1))
        top, bottom, left, right = top + 1, bottom - 1, left + 1, right - 1
    return out


def fill_spiral(rows, cols):
    m = [[0] * cols for _ in range(rows)]
    dr, dc = (0, 1, 0, -1), (1, 0, -1, 0)
    r = c = d = 0
    for i in range(1, rows * cols + 1):
        m[r][c] = i
        nr, nc = r + dr[d], c + dc[d]
        if not (0 <= nr < rows and 0 <= nc < cols and m[nr][nc] == 0):
            d = (d + 1) % 4
            nr, nc = r + dr[d], c + dc[d]
        r, c = nr, nc
    return m
