"""examples/python/rollouts.py on a small setting against the fixture server."""

from __future__ import annotations

import importlib.util
import json
import math
import subprocess
import sys

import pytest

from _server import REPO

EXAMPLE = REPO / "examples" / "python" / "rollouts.py"


@pytest.fixture(scope="module")
def rollouts_mod():
    spec = importlib.util.spec_from_file_location("sandgym_rollouts_example", EXAMPLE)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def test_group_advantages(rollouts_mod):
    adv = rollouts_mod.group_advantages([1.0, 0.0, 0.0, 1.0])
    assert adv == pytest.approx([1, -1, -1, 1], abs=1e-5)
    assert rollouts_mod.group_advantages([0.5, 0.5]) == [0.0, 0.0]  # no signal, no NaN
    assert rollouts_mod.group_advantages([]) == []


def test_safe_eval(rollouts_mod):
    assert rollouts_mod.safe_eval("2^3 - 4 * (1 + 1)") == 0
    with pytest.raises(ValueError):
        rollouts_mod.safe_eval("__import__('os')")


@pytest.mark.parametrize("env_id", ["calculator-tools-v0", "math-v0"])
def test_rollouts_small(url, tmp_path, rollouts_mod, env_id):
    out = tmp_path / "r.jsonl"
    args = rollouts_mod.parse_args(
        ["--url", url, "--env", env_id, "--tasks", "3", "--group-size", "4", "--out", str(out), "--seed", "5"]
    )
    import asyncio

    result = asyncio.run(rollouts_mod.rollouts(args))
    assert result["episodes"] == 12
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(lines) == 12
    for task in range(3):
        group = [r for r in lines if r["task"] == task]
        assert len(group) == 4
        assert all(r["failure"] is None for r in group)
        assert len({r["seed"] for r in group}) == 1  # same task (the env derives it from the seed)
        assert len({r["policy_seed"] for r in group}) == 4  # different policy seeds
        assert all(r["terminated"] or r["truncated"] for r in group)
        assert all(r["messages"][0]["role"] == "system" and r["messages"][-2]["role"] == "assistant" for r in group)
        assert abs(sum(r["advantage"] for r in group)) < 1e-6
        assert all(math.isfinite(r["return"]) for r in group)


def test_rollouts_with_task_options_and_failures(url, tmp_path, rollouts_mod):
    # wordle-v0 tasks are reset options; an unknown word is the env's INVALID_ARGUMENT: recorded as
    # failed episodes and kept out of the advantages.
    out = tmp_path / "w.jsonl"
    args = rollouts_mod.parse_args(
        [
            "--url",
            url,
            "--env",
            "wordle-v0",
            "--tasks",
            "2",
            "--group-size",
            "3",
            "--task-options",
            '[{"word": "crane"}, {"word": "zzzzz"}]',
            "--max-steps",
            "3",
            "--out",
            str(out),
        ]
    )
    import asyncio

    result = asyncio.run(rollouts_mod.rollouts(args))
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    ok = [r for r in lines if r["task"] == 0]
    bad = [r for r in lines if r["task"] == 1]
    assert all(r["failure"] is None and r["options"] == {"word": "crane"} for r in ok)
    assert len({r["seed"] for r in ok}) == 3  # different seeds, same task
    assert all(
        r["failure"]["code"] == "INVALID_ARGUMENT" and r["advantage"] is None and r["return"] is None for r in bad
    )
    assert result["groups"][1]["failed"] == 3


def test_rollouts_cli(url, tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            str(EXAMPLE),
            "--url",
            url,
            "--tasks",
            "2",
            "--group-size",
            "2",
            "--out",
            str(tmp_path / "c.jsonl"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "| task | episodes |" in proc.stdout
    assert len((tmp_path / "c.jsonl").read_text().splitlines()) == 4
