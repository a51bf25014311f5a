"""The Gymnasium adapter passes gymnasium's own env checker for every expressible built-in env."""

from __future__ import annotations

import warnings

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import sandgym
import sandgym.gym
from sandgym.spaces import is_gym_expressible

BUILTINS = ["math-v0", "wordle-v0", "test/counter-v0", "test/truncate-v0", "test/dict-v0"]
#: tool_call envs: their action space is the custom ``ToolCallSpace`` (no gymnasium built-in equivalent);
#: check_env runs on them too (below), and the adapter is also checked by hand.
TOOL_ENVS = ["calculator-tools-v0", "test/tools-v0"]


@pytest.fixture(scope="module")
def specs(url):
    with sandgym.Client(url) as client:
        return {e["id"]: e for e in client.list_envs()}


@pytest.mark.parametrize("env_id", BUILTINS)
def test_check_env(url, specs, env_id):
    spec = specs[env_id]
    assert is_gym_expressible(spec["action_space"]) and is_gym_expressible(spec["observation_space"])
    env = sandgym.gym.make(url, env_id)
    try:
        assert isinstance(env, gymnasium.Env)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # any checker warning fails the test
            check_env(env, skip_render_check=True)
    finally:
        env.close()
    env.close()  # twice is fine


@pytest.mark.parametrize("env_id", TOOL_ENVS)
def test_check_env_tool_call_envs(url, specs, env_id):
    """gymnasium's checker accepts the custom ToolCallSpace (a Space subclass with sample/contains)."""
    assert not is_gym_expressible(specs[env_id]["action_space"])
    env = sandgym.gym.make(url, env_id)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            check_env(env, skip_render_check=True)
    finally:
        env.close()


def test_gym_conversions_dict_env(url):
    env = sandgym.gym.make(url, "test/dict-v0")
    try:
        obs, _info = env.reset(seed=0)
        assert list(obs) == ["position", "label"]
        assert isinstance(obs["position"], np.ndarray) and obs["position"].dtype == np.float64
        assert obs in env.observation_space
        action = {"move": np.array([0.25, -1.0]), "say": "hi"}
        assert action in env.action_space
        obs, reward, _terminated, _truncated, _info = env.step(action)
        np.testing.assert_allclose(obs["position"], [0.25, -1.0])
        assert reward == 1.0 and obs["label"] == "hi"
        assert env.env_spec["id"] == "test/dict-v0"
    finally:
        env.close()


def test_gym_tool_call_env_is_usable(url):
    # Not checkable with check_env, but still a working gymnasium.Env with a ToolCallSpace.
    env = sandgym.gym.make(url, "calculator-tools-v0")
    try:
        assert isinstance(env.action_space, sandgym.spaces.ToolCallSpace)
        obs, _ = env.reset(seed=1)
        assert obs in env.observation_space
        env.action_space.seed(0)
        action = env.action_space.sample()
        assert action in env.action_space
        try:
            env.step(action)
        except sandgym.SandgymError as exc:  # a sampled call may be semantically invalid for the env
            assert exc.code in ("INVALID_ACTION", "RESET_NEEDED")
    finally:
        env.close()


def test_gym_make_with_shared_client(url):
    with sandgym.Client(url) as client:
        envs = [sandgym.gym.make(client, "test/counter-v0") for _ in range(3)]
        for e in envs:
            assert e.reset(seed=0)[0] == 0
            assert e.step(1)[0] == 1
            e.close()
        assert not client.closed  # the shared client stays open


@pytest.mark.parametrize("env_id", TOOL_ENVS)
def test_tool_call_env_through_the_adapter(url, specs, env_id):
    """What check_env would check, by hand: spaces, seeded determinism, contains/sample, close twice."""
    assert not is_gym_expressible(specs[env_id]["action_space"])
    env = sandgym.gym.make(url, env_id)
    try:
        assert isinstance(env, gymnasium.Env)
        space = env.action_space
        assert isinstance(space, gymnasium.spaces.Space)
        names = [t["name"] for t in specs[env_id]["action_space"]["tools"]]
        sample = space.sample()
        assert sample["name"] in names and space.contains(sample)
        assert not space.contains({"name": "no_such_tool", "arguments": {}})
        obs1, _ = env.reset(seed=11)
        assert env.observation_space.contains(obs1)
        obs2, _ = env.reset(seed=11)
        assert obs1 == obs2
        tool = "calculate" if env_id == "calculator-tools-v0" else "add"
        args = {"expression": "6*7"} if tool == "calculate" else {"a": 40, "b": 2}
        obs, reward, terminated, truncated, info = env.step({"name": tool, "arguments": args})
        assert "42" in str(obs)
        assert isinstance(reward, float) and not terminated and not truncated and isinstance(info, dict)
    finally:
        env.close()
    env.close()
