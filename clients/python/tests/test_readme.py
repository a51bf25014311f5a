"""Docs stay true: the root README's Python episode runs as written against a real server
(only the URL is rewritten to the test server's)."""

from __future__ import annotations

import subprocess
import sys

from _server import REPO
from sandgym._core import PROTOCOL_VERSION

# The README's URL is the current major's endpoint.
DEFAULT_URL = f"ws://127.0.0.1:8765/v{PROTOCOL_VERSION}/ws"


def snippet_after(markdown: str, heading: str, lang: str) -> str:
    at = markdown.index(heading)
    fence = "```" + lang + "\n"
    start = markdown.index(fence, at) + len(fence)
    end = markdown.index("\n```", start)
    return markdown[start : end + 1]


def test_readme_python_episode_runs(url: str) -> None:
    readme = (REPO / "README.md").read_text("utf-8")
    code = snippet_after(readme, "## An episode in Python", "python")
    assert DEFAULT_URL in code
    out = subprocess.run(
        [sys.executable, "-c", code.replace(DEFAULT_URL, url)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    # "<reward> <terminated> <components>": math-v0 is single-turn, so terminated is True.
    reward, terminated, rest = out.stdout.strip().split(" ", 2)
    assert 0.0 <= float(reward) <= 1.0
    assert terminated == "True"
    assert "'correctness'" in rest and "'format'" in rest
