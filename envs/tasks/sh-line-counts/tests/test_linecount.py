import os
import pathlib

WS = pathlib.Path(os.environ.get("SANDGYM_WORKSPACE", os.getcwd()))

import subprocess


def sh(script, *args, cwd=None):
    return subprocess.run(["bash", str(WS / script), *map(str, args)], capture_output=True, text=True,
                          timeout=30, cwd=cwd)


def test_counts_and_order(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "a.txt").write_text("1\n2\n")
    (tmp_path / "d" / "b c.txt").write_text("1\n2\n3")
    (tmp_path / "z.txt").write_text("x\ny\n")
    (tmp_path / "skip.md").write_text("1\n2\n3\n4\n")
    r = sh("linecount.sh", tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["3 d/b c.txt", "2 a.txt", "2 z.txt", "total 7"]


def test_empty_file(tmp_path):
    (tmp_path / "e.txt").write_text("")
    assert sh("linecount.sh", tmp_path).stdout.splitlines() == ["0 e.txt", "total 0"]


def test_no_files(tmp_path):
    assert sh("linecount.sh", tmp_path).stdout.splitlines() == ["total 0"]


def test_single_line_without_newline(tmp_path):
    (tmp_path / "one.txt").write_text("only")
    assert sh("linecount.sh", tmp_path).stdout.splitlines() == ["1 one.txt", "total 1"]


def test_directory_named_txt_ignored(tmp_path):
    (tmp_path / "dir.txt").mkdir()
    (tmp_path / "dir.txt" / "in.txt").write_text("a\n")
    assert sh("linecount.sh", tmp_path).stdout.splitlines() == ["1 dir.txt/in.txt", "total 1"]
