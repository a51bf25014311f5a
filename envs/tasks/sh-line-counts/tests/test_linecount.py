from sandgym_harness import workspace


def sh(*args):
    return workspace.run(["bash", "linecount.sh", *map(str, args)], timeout=30)


def test_counts_and_order():
    d = workspace.tmpdir()
    workspace.mkdir(d + "/d")
    workspace.write_file(d + "/a.txt", "1\n2\n")
    workspace.write_file(d + "/d/b c.txt", "1\n2\n3")
    workspace.write_file(d + "/z.txt", "x\ny\n")
    workspace.write_file(d + "/skip.md", "1\n2\n3\n4\n")
    r = sh(d)
    assert r.exit_code == 0, "bash linecount.sh DIR should exit 0"
    assert r.stdout.splitlines() == ["3 d/b c.txt", "2 a.txt", "2 z.txt", "total 7"]


def test_empty_file():
    d = workspace.tmpdir()
    workspace.write_file(d + "/e.txt", "")
    assert sh(d).stdout.splitlines() == ["0 e.txt", "total 0"]


def test_no_files():
    d = workspace.tmpdir()
    assert sh(d).stdout.splitlines() == ["total 0"]


def test_single_line_without_newline():
    d = workspace.tmpdir()
    workspace.write_file(d + "/one.txt", "only")
    assert sh(d).stdout.splitlines() == ["1 one.txt", "total 1"]


def test_directory_named_txt_ignored():
    d = workspace.tmpdir()
    workspace.mkdir(d + "/dir.txt")
    workspace.write_file(d + "/dir.txt/in.txt", "a\n")
    assert sh(d).stdout.splitlines() == ["1 dir.txt/in.txt", "total 1"]
