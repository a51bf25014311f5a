from sandgym_harness import workspace


def test_dirs():
    for d in ["src", "docs", "bin"]:
        assert workspace.isdir(d), "missing directory " + d + "/"


def test_run_sh():
    assert workspace.stat("bin/run.sh")["is_executable"], "bin/run.sh must be executable"
    r = workspace.run(["bin/run.sh"], timeout=10)
    assert r.exit_code == 0 and r.stdout == "ok\n"


def test_version():
    assert workspace.read_text("src/__init__.py").strip() == '__version__ = "0.1.0"'
    assert workspace.read_text("src/__init__.py").rstrip("\n") == '__version__ = "0.1.0"', "exactly one line"


def test_readme():
    assert workspace.read_text("docs/README.md").splitlines()[0] == "# demo"


def test_gitignore():
    lines = [line.strip() for line in workspace.read_text(".gitignore").splitlines()]
    assert "__pycache__/" in lines and "*.log" in lines, "one entry per line"


def test_todo_removed_notes_kept():
    assert not workspace.exists("TODO.txt")
    assert workspace.read_text("NOTES.md") == "Project notes (keep this file).\n"
