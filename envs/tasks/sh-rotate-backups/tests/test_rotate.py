import os
import pathlib

WS = pathlib.Path(os.environ.get("SANDGYM_WORKSPACE", os.getcwd()))

import subprocess


def sh(script, *args, cwd=None):
    return subprocess.run(["bash", str(WS / script), *map(str, args)], capture_output=True, text=True,
                          timeout=30, cwd=cwd)

import os

NAMES = ["backup-2024-01-05.tar.gz", "backup-2023-12-31.tar.gz", "backup-2024-02-01.tar.gz", "backup-2024-01-20.tar.gz"]


def make_backups(tmp_path):
    for i, n in enumerate(NAMES):
        p = tmp_path / n
        p.write_text(n)
        os.utime(p, (1000 - i, 1000 - i))  # file times deliberately disagree with the names
    (tmp_path / "notes.txt").write_text("keep")
    (tmp_path / "backup-latest.tar.gz").write_text("keep")


def remaining(tmp_path):
    return sorted(p.name for p in tmp_path.iterdir())


def test_keep_two(tmp_path):
    make_backups(tmp_path)
    r = sh("rotate.sh", tmp_path, 2)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["backup-2023-12-31.tar.gz", "backup-2024-01-05.tar.gz"]
    assert remaining(tmp_path) == ["backup-2024-01-20.tar.gz", "backup-2024-02-01.tar.gz", "backup-latest.tar.gz", "notes.txt"]


def test_keep_zero(tmp_path):
    make_backups(tmp_path)
    r = sh("rotate.sh", tmp_path, 0)
    assert r.returncode == 0
    assert remaining(tmp_path) == ["backup-latest.tar.gz", "notes.txt"]
    assert len(r.stdout.splitlines()) == 4


def test_keep_more_than_present(tmp_path):
    make_backups(tmp_path)
    r = sh("rotate.sh", tmp_path, 10)
    assert r.returncode == 0 and r.stdout.strip() == ""
    assert len(remaining(tmp_path)) == 6


def test_subdirectories_untouched(tmp_path):
    make_backups(tmp_path)
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "backup-2000-01-01.tar.gz").write_text("x")
    sh("rotate.sh", tmp_path, 1)
    assert (tmp_path / "old" / "backup-2000-01-01.tar.gz").exists()


def test_bad_arguments(tmp_path):
    make_backups(tmp_path)
    for args in [(tmp_path, "-1"), (tmp_path, "two"), (tmp_path / "nope", "1"), (tmp_path,)]:
        assert sh("rotate.sh", *args).returncode == 2
    assert len(remaining(tmp_path)) == 6
