"""Docs stay true: docs/TRAINING.md's commands and snippets run as written, in order (the server's port, the
URL and the run length are the test's; the GRPO snippet gets the tiny model and tokenizer it says you bring)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import threading
from collections.abc import Iterator

import pytest
from _trl_gate import require_trl

require_trl()

from _server import LISTEN_RE, REPO  # noqa: E402

DOC = REPO / "docs" / "TRAINING.md"
DOC_URL = "ws://127.0.0.1:8765/v2/ws"
BLOCKS = re.findall(r"```(bash|python)\n(.*?)\n```", DOC.read_text("utf-8"), flags=re.S)
ENV = {
    **os.environ,
    "HF_HUB_OFFLINE": "1",
    "TRL_EXPERIMENTAL_SILENCE": "1",
    "PYTHONPATH": str(REPO / "examples" / "python"),
}


def _blocks(lang: str) -> list[str]:
    return [code for kind, code in BLOCKS if kind == lang]


@pytest.fixture(scope="module")
def doc_server() -> Iterator[str]:
    """The page's server command, on a free port instead of 8765."""
    cmd = _blocks("bash")[1]
    assert cmd.startswith("node bin/sandgym.js serve") and "--port 8765" in cmd
    args = [*shlex.split(cmd.replace("--port 8765", "--port 0")), "--log-level", "warn"]
    proc = subprocess.Popen(args, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    found: list[str] = []
    ready = threading.Event()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            m = LISTEN_RE.search(line)
            if m and not found:
                found.append(m.group(1))
                ready.set()
        ready.set()

    threading.Thread(target=pump, daemon=True).start()
    ready.wait(120)
    try:
        assert found, "the page's server command printed no listening line"
        yield found[0]
    finally:
        proc.terminate()
        proc.wait(30)


def test_page_has_the_blocks_this_test_runs():
    assert len(_blocks("bash")) == 3 and len(_blocks("python")) == 3


def test_install_command():
    cmd = _blocks("bash")[0]
    assert shlex.split(cmd) == ["pip", "install", "./clients/python[trl]"]
    # the page's pip, in this venv: everything is present, so this checks the extra resolves and installs
    out = subprocess.run(
        [sys.executable, "-m", *shlex.split(cmd)], cwd=REPO, capture_output=True, text=True, timeout=900, check=False
    )
    assert out.returncode == 0, out.stderr[-3000:]


def test_chat_and_rollout_snippets(doc_server):
    outputs = []
    for code in _blocks("python")[:2]:
        assert DOC_URL in code
        out = subprocess.run(
            [sys.executable, "-c", code.replace(DOC_URL, doc_server)],
            cwd=REPO,
            env=ENV,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert out.returncode == 0, out.stderr[-3000:]
        outputs.append(out.stdout)
    # the chat snippet: the tool message carries the call's id and the value; the right answer scores 1
    assert "'tool_call_id': 'call_1'" in outputs[0] and "'content': '3422'" in outputs[0]
    assert "1.0 True" in outputs[0]
    # the rollout snippet: 8 episodes, each "return components advantage failure"
    assert len(outputs[1].strip().splitlines()) == 8 and "None" in outputs[1]


def test_grpo_snippet_and_script(doc_server, tmp_path):
    code = _blocks("python")[2]
    assert "max_steps=100" in code and DOC_URL in code
    preamble = (
        "import trl_grpo\ntokenizer = trl_grpo.tiny_tokenizer()\nmodel = trl_grpo.tiny_model(len(tokenizer), 0)\n"
    )
    run = preamble + code.replace(DOC_URL, doc_server).replace("max_steps=100", "max_steps=1").replace(
        "num_generations=8",
        "num_generations=2, per_device_train_batch_size=2, max_completion_length=4, use_cpu=True, report_to='none'",
    )
    out = subprocess.run(
        [sys.executable, "-c", run], cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=900, check=False
    )
    assert out.returncode == 0, out.stderr[-3000:]

    cmd = _blocks("bash")[2]
    assert cmd.startswith("python examples/python/trl_grpo.py") and "--steps 40" in cmd
    args = shlex.split(cmd.replace(DOC_URL, doc_server).replace("--steps 40", "--steps 2"))
    args = [sys.executable, str(REPO / args[1]), *args[2:]]
    out = subprocess.run(args, cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=900, check=False)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "2 GRPO steps on math-v0" in out.stdout
    assert (tmp_path / "grpo-run.json").stat().st_size > 0 and (tmp_path / "grpo-reward.png").stat().st_size > 0
