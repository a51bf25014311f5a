import os
import pathlib

WS = pathlib.Path(os.environ.get("SANDGYM_WORKSPACE", os.getcwd()))

import csv

import pytest
from join import join_csv


def w(p, rows):
    with open(p, "w", newline="") as fh:
        csv.writer(fh).writerows(rows)
    return p


def r(p):
    with open(p, newline="") as fh:
        return list(csv.reader(fh))


@pytest.fixture
def files(tmp_path):
    left = w(tmp_path / "l.csv", [["id", "name", "city"], ["1", "ann", "Oslo"], ["2", "bob", "Rome"], ["3", "cy", "Nice"]])
    right = w(tmp_path / "r.csv", [["city", "id", "score"], ["Paris", "2", "10"], ["Lyon", "2", "11"], ["Kiev", "4", "7"], ["Oslo", "1", "5"]])
    return left, right, tmp_path / "o.csv"


def test_inner(files):
    left, right, out = files
    assert join_csv(left, right, out, "id") == 3
    assert r(out) == [["id", "name", "city", "city_right", "score"], ["1", "ann", "Oslo", "Oslo", "5"],
                      ["2", "bob", "Rome", "Paris", "10"], ["2", "bob", "Rome", "Lyon", "11"]]


def test_left(files):
    left, right, out = files
    assert join_csv(left, right, out, "id", how="left") == 4
    assert r(out)[-1] == ["3", "cy", "Nice", "", ""]


def test_outer(files):
    left, right, out = files
    assert join_csv(left, right, out, "id", how="outer") == 5
    assert r(out)[-1] == ["4", "", "", "Kiev", "7"]


def test_bad_how(files):
    left, right, out = files
    with pytest.raises(ValueError):
        join_csv(left, right, out, "id", how="cross")


def test_missing_key_column(files, tmp_path):
    left, _, out = files
    other = w(tmp_path / "x.csv", [["a", "b"], ["1", "2"]])
    with pytest.raises(KeyError):
        join_csv(left, other, out, "id")


def test_quoting_roundtrip(tmp_path):
    left = w(tmp_path / "l.csv", [["k", "text"], ["a", "x, \"quoted\""]])
    right = w(tmp_path / "r.csv", [["k", "more"], ["a", "line\nbreak"]])
    out = tmp_path / "o.csv"
    assert join_csv(left, right, out, "k") == 1
    assert r(out) == [["k", "text", "more"], ["a", "x, \"quoted\"", "line\nbreak"]]


def test_empty_right(tmp_path):
    left = w(tmp_path / "l.csv", [["k", "v"], ["a", "1"]])
    right = w(tmp_path / "r.csv", [["k", "w"]])
    out = tmp_path / "o.csv"
    assert join_csv(left, right, out, "k") == 0
    assert r(out) == [["k", "v", "w"]]
    assert join_csv(left, right, out, "k", how="left") == 1
