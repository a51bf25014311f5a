"""End to end: TRL's GRPOTrainer trains a tiny randomly initialised causal LM on CPU against a live sandgym
server (math-v0), rewards over the wire. The run is examples/python/trl_grpo.py's ``train`` with every seed
fixed; nothing is downloaded (the model is built from a config, the tokenizer locally).

Asserted: training ran every step; every reward TRL saw is one the server gave (its reward_components add
up to it, and the trainer's logged mean reward of each step is the mean of that step's server rewards);
the rewards reached the loss (a step whose groups all had equal rewards has zero advantages and so a zero
gradient with beta=0, any other step a nonzero one); the mean reward of the last steps beats the first.
"""

from __future__ import annotations

import statistics
import sys

import pytest
from _trl_gate import require_trl

require_trl()

from _server import REPO  # noqa: E402

sys.path.insert(0, str(REPO / "examples" / "python"))
import trl_grpo  # noqa: E402

STEPS = 40  # about 2 s of CPU per step here (batch 16, at most 16 new tokens): 125 s at load ~5


@pytest.fixture(scope="module")
def run(server) -> dict:
    return trl_grpo.train(server.url, "math-v0", steps=STEPS, seed=0)


def test_training_ran(run):
    assert len(run["log"]) == STEPS
    assert run["reward_func_names"] == ["reward_func"]
    assert len(run["rewards"]) == STEPS * run["batch"]


def test_every_reward_came_from_the_server(run):
    for entry in run["rewards"]:
        assert entry["failure"] is None and entry["steps"] == 1
        assert entry["reward"] == pytest.approx(sum(entry["reward_components"].values()))
        assert set(entry["reward_components"]) == {"correctness", "format"}


def test_rewards_reached_the_loss(run):
    batch = run["batch"]
    nonzero_steps = 0
    for i, row in enumerate(run["log"]):
        served = [e["reward"] for e in run["rewards"][i * batch : (i + 1) * batch]]
        assert row["reward"] == pytest.approx(statistics.fmean(served), abs=1e-6)
        if row["frac_reward_zero_std"] == 1.0:
            assert row["grad_norm"] == 0.0  # no advantage, no gradient (beta=0): the loss is the rewards'
        else:
            assert row["grad_norm"] > 0.0
            nonzero_steps += 1
    assert nonzero_steps >= 3


def test_mean_reward_improves(run):
    rewards = [row["reward"] for row in run["log"]]
    n = STEPS // 4
    first, last = statistics.fmean(rewards[:n]), statistics.fmean(rewards[-n:])
    assert last > first, f"mean reward first {n} steps {first:.4f}, last {n} steps {last:.4f}"
