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


def test_numeric_order_and_byte_order_ties():
    # counts compare as numbers (10 before 9); equal counts sort by path in byte order
    d = workspace.tmpdir()
    workspace.write_file(d + "/nine.txt", "x\n" * 9)
    workspace.write_file(d + "/ten.txt", "x\n" * 10)
    workspace.write_file(d + "/b.txt", "\n")
    workspace.write_file(d + "/B.txt", "y")
    workspace.write_file(d + "/a b.txt", "\n")
    workspace.write_file(d + "/a.txt", "z\n")
    r = sh(d)
    assert r.exit_code == 0, "bash linecount.sh DIR should exit 0"
    assert r.stdout.splitlines() == ["10 ten.txt", "9 nine.txt", "1 B.txt", "1 a b.txt", "1 a.txt", "1 b.txt",
                                     "total 23"]


def test_hidden_and_deep_files_only_txt():
    # hidden files and directories count; only names ending in ".txt" do
    d = workspace.tmpdir()
    workspace.mkdir(d + "/.cache/x/y")
    workspace.write_file(d + "/.notes.txt", "1\n2\n3\n")
    workspace.write_file(d + "/.cache/x/y/deep.txt", "\n\n\n\n")
    workspace.write_file(d + "/keep.txt.bak", "1\n")
    workspace.write_file(d + "/txt", "1\n")
    workspace.write_file(d + "/upper.TXT", "1\n")
    workspace.write_file(d + "/blank.txt", "\n\n")
    r = sh(d)
    assert r.exit_code == 0, "bash linecount.sh DIR should exit 0"
    assert r.stdout.splitlines() == ["4 .cache/x/y/deep.txt", "3 .notes.txt", "2 blank.txt", "total 9"]


def test_caller_environment_does_not_leak_in():
    # the output depends on DIR only: variables the caller happens to export are not a starting state
    d = workspace.tmpdir()
    workspace.write_file(d + "/a.txt", "1\n2\n")
    env = {"lines": "stray", "total": "5", "n": "9", "f": "x.txt", "dir": "/"}
    r = workspace.run(["bash", "linecount.sh", d], env=env, timeout=30)
    assert r.exit_code == 0, "bash linecount.sh DIR should exit 0"
    assert r.stdout.splitlines() == ["2 a.txt", "total 2"]
