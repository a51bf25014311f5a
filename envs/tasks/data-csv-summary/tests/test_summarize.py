import os
import pathlib

WS = pathlib.Path(os.environ.get("SANDGYM_WORKSPACE", os.getcwd()))

import json
import subprocess
import sys


def run(script, *args, stdin=None, cwd=None):
    return subprocess.run([sys.executable, str(WS / script), *map(str, args)], input=stdin,
                          capture_output=True, text=True, timeout=30, cwd=cwd)


def write(tmp_path, text):
    p = tmp_path / "in.csv"
    p.write_text(text)
    return p


def test_basic(tmp_path):
    p = write(tmp_path, "category,amount\nfood,10\nfood,5.5\nrent,700\n")
    r = run("summarize.py", p)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == {"_skipped": 0, "food": {"count": 2, "total": 15.5, "mean": 7.75},
                                    "rent": {"count": 1, "total": 700.0, "mean": 700.0}}


def test_column_order_and_extra_columns(tmp_path):
    p = write(tmp_path, "id,amount,note,category\n1,3,x,a\n2,4,y,a\n")
    assert json.loads(run("summarize.py", p).stdout)["a"] == {"count": 2, "total": 7.0, "mean": 3.5}


def test_quoted_commas_and_whitespace(tmp_path):
    p = write(tmp_path, 'category,amount\n"  books, used ",12.345\n"books, used",1\n')
    out = json.loads(run("summarize.py", p).stdout)
    assert out["books, used"] == {"count": 2, "total": 13.35, "mean": 6.67}


def test_skips_bad_rows_and_blank_lines(tmp_path):
    p = write(tmp_path, "category,amount\n\nfood,\nfood,abc\nfood,2\n\n")
    out = json.loads(run("summarize.py", p).stdout)
    assert out == {"_skipped": 2, "food": {"count": 1, "total": 2.0, "mean": 2.0}}


def test_sorted_keys(tmp_path):
    p = write(tmp_path, "category,amount\nz,1\na,1\nm,1\n")
    r = run("summarize.py", p)
    assert list(json.loads(r.stdout)) == ["_skipped", "a", "m", "z"]


def test_missing_file(tmp_path):
    r = run("summarize.py", tmp_path / "nope.csv")
    assert r.returncode == 2 and r.stderr.strip()


def test_missing_column(tmp_path):
    p = write(tmp_path, "category,price\na,1\n")
    r = run("summarize.py", p)
    assert r.returncode == 2 and r.stderr.strip()
