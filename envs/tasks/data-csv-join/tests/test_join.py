import csv
import io

import pytest
from sandgym_harness import workspace

join = workspace.module("join")


def w(path, rows):
    buf = io.StringIO(newline="")
    csv.writer(buf).writerows(rows)
    workspace.write_file(path, buf.getvalue())
    return path


def r(path):
    return list(csv.reader(io.StringIO(workspace.read_text(path), newline="")))


@pytest.fixture
def tmp():
    return workspace.tmpdir()


@pytest.fixture
def files(tmp):
    left = w(tmp + "/l.csv", [["id", "name", "city"], ["1", "ann", "Oslo"], ["2", "bob", "Rome"], ["3", "cy", "Nice"]])
    right = w(tmp + "/r.csv", [["city", "id", "score"], ["Paris", "2", "10"], ["Lyon", "2", "11"], ["Kiev", "4", "7"], ["Oslo", "1", "5"]])
    return left, right, tmp + "/o.csv"


def test_inner(files):
    left, right, out = files
    assert join.join_csv(left, right, out, "id") == 3
    assert r(out) == [["id", "name", "city", "city_right", "score"], ["1", "ann", "Oslo", "Oslo", "5"],
                      ["2", "bob", "Rome", "Paris", "10"], ["2", "bob", "Rome", "Lyon", "11"]]


def test_left(files):
    left, right, out = files
    assert join.join_csv(left, right, out, "id", how="left") == 4
    assert r(out)[-1] == ["3", "cy", "Nice", "", ""]


def test_outer(files):
    left, right, out = files
    assert join.join_csv(left, right, out, "id", how="outer") == 5
    assert r(out)[-1] == ["4", "", "", "Kiev", "7"]


def test_bad_how(files):
    left, right, out = files
    with pytest.raises(ValueError):
        join.join_csv(left, right, out, "id", how="cross")


def test_missing_key_column(files, tmp):
    left, _, out = files
    other = w(tmp + "/x.csv", [["a", "b"], ["1", "2"]])
    with pytest.raises(KeyError):
        join.join_csv(left, other, out, "id")


def test_quoting_roundtrip(tmp):
    left = w(tmp + "/l.csv", [["k", "text"], ["a", "x, \"quoted\""]])
    right = w(tmp + "/r.csv", [["k", "more"], ["a", "line\nbreak"]])
    out = tmp + "/o.csv"
    assert join.join_csv(left, right, out, "k") == 1
    assert r(out) == [["k", "text", "more"], ["a", "x, \"quoted\"", "line\nbreak"]]


def test_empty_right(tmp):
    left = w(tmp + "/l.csv", [["k", "v"], ["a", "1"]])
    right = w(tmp + "/r.csv", [["k", "w"]])
    out = tmp + "/o.csv"
    assert join.join_csv(left, right, out, "k") == 0
    assert r(out) == [["k", "v", "w"]]
    assert join.join_csv(left, right, out, "k", how="left") == 1


def test_outer_key_column_not_first(tmp):
    left = w(tmp + "/l.csv", [["name", "id", "score"], ["ann", "1", "9"], ["bob", "2", "8"]])
    right = w(tmp + "/r.csv", [["score", "id"], ["5", "3"], ["6", "1"], ["7", "4"]])
    out = tmp + "/o.csv"
    assert join.join_csv(left, right, out, "id", how="outer") == 4
    assert r(out) == [["name", "id", "score", "score_right"], ["ann", "1", "9", "6"], ["bob", "2", "8", ""],
                      ["", "3", "", "5"], ["", "4", "", "7"]]


def test_keys_match_exactly(tmp):
    left = w(tmp + "/l.csv", [["k", "v"], ["1", "a"], ["A", "b"], [" x", "c"]])
    right = w(tmp + "/r.csv", [["k", "w"], ["01", "p"], ["a", "q"], ["x", "r"], ["1", "s"]])
    out = tmp + "/o.csv"
    assert join.join_csv(left, right, out, "k", how="left") == 3
    assert r(out) == [["k", "v", "w"], ["1", "a", "s"], ["A", "b", ""], [" x", "c", ""]]
