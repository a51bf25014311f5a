import os
import pathlib

WS = pathlib.Path(os.environ.get("SANDGYM_WORKSPACE", os.getcwd()))

import subprocess


def sh(script, *args, cwd=None):
    return subprocess.run(["bash", str(WS / script), *map(str, args)], capture_output=True, text=True,
                          timeout=30, cwd=cwd)

import os


def test_dirs():
    for d in ["src", "docs", "bin"]:
        assert (WS / d).is_dir()


def test_run_sh():
    p = WS / "bin" / "run.sh"
    assert os.access(p, os.X_OK)
    r = subprocess.run([str(p)], capture_output=True, text=True, timeout=10)
    assert r.returncode == 0 and r.stdout == "ok\n"


def test_version():
    assert (WS / "src" / "__init__.py").read_text().strip() == '__version__ = "0.1.0"'


def test_readme():
    assert (WS / "docs" / "README.md").read_text().splitlines()[0] == "# demo"


def test_gitignore():
    lines = (WS / ".gitignore").read_text().split()
    assert "__pycache__/" in lines and "*.log" in lines


def test_todo_removed_notes_kept():
    assert not (WS / "TODO.txt").exists()
    assert (WS / "NOTES.md").read_text() == "Project notes (keep this file).\n"
