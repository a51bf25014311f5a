"""The Python package as a user gets it: build the sdist and the wheel (``python -m build``), install the
wheel into a fresh venv (no extras), run the README's Python episode there against a real server, and
check that ``import sandgym.gym`` in that venv names the missing extra. Needs the package index (or a
warm pip cache) for the build backend and the two dependencies.
"""

from __future__ import annotations

import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from _server import REPO
from test_readme import DEFAULT_URL, snippet_after

PKG = REPO / "clients" / "python"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "build", "--sdist", "--wheel", "--outdir", str(out), str(PKG)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    wheel = next(out.glob("sandgym-*.whl"))
    sdist = next(out.glob("sandgym-*.tar.gz"))
    venv = tmp_path_factory.mktemp("venv") / "v"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    py = venv / "bin" / "python"
    subprocess.run(
        [str(py), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", str(wheel)], check=True, timeout=600
    )
    return {"wheel": wheel, "sdist": sdist, "python": py}


def test_wheel_and_sdist_hold_the_package_and_nothing_else(built: dict[str, Path]) -> None:
    names = zipfile.ZipFile(built["wheel"]).namelist()
    assert "sandgym/__init__.py" in names and "sandgym/py.typed" in names and "sandgym/gym.py" in names
    assert not [n for n in names if n.startswith(("tests/", "scripts/")) or "__pycache__" in n]
    with tarfile.open(built["sdist"]) as t:
        members = [m.name.split("/", 1)[1] for m in t.getmembers() if "/" in m.name]
    assert "pyproject.toml" in members and "src/sandgym/__init__.py" in members
    assert not [m for m in members if m.startswith(("tests/", "scripts/")) or "__pycache__" in m]


def test_readme_episode_runs_from_the_installed_wheel(built: dict[str, Path], url: str) -> None:
    code = snippet_after((REPO / "README.md").read_text("utf-8"), "## An episode in Python", "python")
    out = subprocess.run(
        [str(built["python"]), "-c", code.replace(DEFAULT_URL, url)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    reward, terminated, _ = out.stdout.strip().split(" ", 2)
    assert 0.0 <= float(reward) <= 1.0 and terminated == "True"
    # The installed copy, not the repository's sources.
    where = subprocess.run(
        [str(built["python"]), "-c", "import sandgym; print(sandgym.__file__)"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert str(built["python"].parent.parent) in where.stdout


def test_gym_without_the_extra_names_it(built: dict[str, Path]) -> None:
    out = subprocess.run(
        [str(built["python"]), "-c", "import sandgym.gym"], capture_output=True, text=True, timeout=60, check=False
    )
    assert out.returncode == 1
    assert (
        "ImportError: sandgym.gym needs the 'gymnasium' extra (gymnasium is not installed): pip install 'sandgym[gymnasium]'"
        in out.stderr
    )
