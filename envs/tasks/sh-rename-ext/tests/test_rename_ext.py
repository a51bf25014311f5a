import os
import pathlib

WS = pathlib.Path(os.environ.get("SANDGYM_WORKSPACE", os.getcwd()))

import subprocess


def sh(script, *args, cwd=None):
    return subprocess.run(["bash", str(WS / script), *map(str, args)], capture_output=True, text=True,
                          timeout=30, cwd=cwd)


def tree(root):
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def test_renames_recursively(tmp_path):
    (tmp_path / "sub dir").mkdir()
    for name in ["a.jpeg", "b.JPEG", "sub dir/c d.jpeg", "e.jpeg.bak", "f.png"]:
        (tmp_path / name).write_text(name)
    r = sh("rename_ext.sh", tmp_path, "jpeg", "jpg")
    assert r.returncode == 0, r.stderr
    assert tree(tmp_path) == ["a.jpg", "b.JPEG", "e.jpeg.bak", "f.png", "sub dir", "sub dir/c d.jpg"]
    assert (tmp_path / "sub dir" / "c d.jpg").read_text() == "sub dir/c d.jpeg"
    assert r.stdout.strip().splitlines()[-1] == "2"


def test_directories_not_renamed(tmp_path):
    (tmp_path / "x.jpeg").mkdir()
    r = sh("rename_ext.sh", tmp_path, "jpeg", "jpg")
    assert r.returncode == 0
    assert (tmp_path / "x.jpeg").is_dir()
    assert r.stdout.strip().splitlines()[-1] == "0"


def test_conflict(tmp_path):
    (tmp_path / "a.jpeg").write_text("new")
    (tmp_path / "a.jpg").write_text("old")
    (tmp_path / "b.jpeg").write_text("b")
    r = sh("rename_ext.sh", tmp_path, "jpeg", "jpg")
    assert r.returncode == 1
    assert r.stderr.strip()
    assert (tmp_path / "a.jpg").read_text() == "old" and (tmp_path / "a.jpeg").exists()
    assert (tmp_path / "b.jpg").exists()
    assert r.stdout.strip().splitlines()[-1] == "1"


def test_usage(tmp_path):
    assert sh("rename_ext.sh", tmp_path, "a").returncode == 2
    assert sh("rename_ext.sh", tmp_path / "missing", "a", "b").returncode == 2
