def spiral(matrix):
    raise NotImplementedError


def fill_spiral(rows, cols):
    raise NotImplementedError
