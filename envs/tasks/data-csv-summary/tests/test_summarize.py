import json

from sandgym_harness import workspace


def run(*args):
    return workspace.run(["python3", "summarize.py", *map(str, args)], timeout=30)


def write(text):
    p = workspace.tmpdir() + "/in.csv"
    workspace.write_file(p, text)
    return p


def test_basic():
    p = write("category,amount\nfood,10\nfood,5.5\nrent,700\n")
    r = run(p)
    assert r.exit_code == 0, "python3 summarize.py <file> should exit 0"
    assert json.loads(r.stdout) == {"_skipped": 0, "food": {"count": 2, "total": 15.5, "mean": 7.75},
                                    "rent": {"count": 1, "total": 700.0, "mean": 700.0}}


def test_column_order_and_extra_columns():
    p = write("id,amount,note,category\n1,3,x,a\n2,4,y,a\n")
    assert json.loads(run(p).stdout)["a"] == {"count": 2, "total": 7.0, "mean": 3.5}


def test_quoted_commas_and_whitespace():
    p = write('category,amount\n"  books, used ",12.345\n"books, used",1\n')
    out = json.loads(run(p).stdout)
    assert out["books, used"] == {"count": 2, "total": 13.35, "mean": 6.67}


def test_skips_bad_rows_and_blank_lines():
    p = write("category,amount\n\nfood,\nfood,abc\nfood,2\n\n")
    out = json.loads(run(p).stdout)
    assert out == {"_skipped": 2, "food": {"count": 1, "total": 2.0, "mean": 2.0}}


def test_sorted_keys():
    p = write("category,amount\nz,1\na,1\nm,1\n")
    r = run(p)
    assert list(json.loads(r.stdout)) == ["_skipped", "a", "m", "z"]


def test_missing_file():
    r = run(workspace.tmpdir() + "/nope.csv")
    assert r.exit_code == 2 and r.stderr.strip()


def test_missing_column():
    p = write("category,price\na,1\n")
    r = run(p)
    assert r.exit_code == 2 and r.stderr.strip()


def test_usage_needs_exactly_one_argument():
    p = write("category,amount\na,1\n")
    for args in [(), (p, p)]:
        r = run(*args)
        assert r.exit_code == 2 and r.stderr.strip(), "a call without exactly one argument must exit 2 with an error"


def test_missing_category_column_or_header():
    for text in ["cat,amount\na,1\n", ""]:
        r = run(write(text))
        assert r.exit_code == 2 and r.stderr.strip()


def test_whitespace_only_lines_are_blank():
    p = write("category,amount\nfood,1\n   \n\t\nfood,2\n  \nrent,4\n")
    out = json.loads(run(p).stdout)
    assert out == {"_skipped": 0, "food": {"count": 2, "total": 3.0, "mean": 1.5},
                   "rent": {"count": 1, "total": 4.0, "mean": 4.0}}


def test_nan_and_infinite_amounts_skipped():
    p = write("category,amount\nx,nan\nx,NaN\nx,inf\nx,-Infinity\nx,3\ny, -1.5 \n")
    r = run(p)
    assert r.exit_code == 0
    assert json.loads(r.stdout) == {"_skipped": 4, "x": {"count": 1, "total": 3.0, "mean": 3.0},
                                    "y": {"count": 1, "total": -1.5, "mean": -1.5}}
