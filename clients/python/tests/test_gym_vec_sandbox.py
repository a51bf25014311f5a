"""The sandboxed shipped envs (shell-v0, code-v0) through gymnasium: ``check_env``, gymnasium's
``SyncVectorEnv`` / ``AsyncVectorEnv`` with default arguments, and ``make_vec``.

They need a sandbox driver: a server started with ``--driver docker`` and the images built. Without
Docker (or an image) the module is skipped with the reason, unless ``SANDGYM_REQUIRE_DOCKER=1`` (which
``.ci/run`` sets) asks for a failure instead, as server/test/sandbox/facilities.ts does for the
TypeScript suites.
"""

from __future__ import annotations

import warnings
from functools import partial
from typing import Any

import gymnasium
import pytest
from gymnasium.utils.env_checker import check_env
from gymnasium.vector import AsyncVectorEnv, SyncVectorEnv

import sandgym
import sandgym.gym
from _server import SANDBOX_IMAGES as IMAGES


def _bash(text: str) -> dict[str, Any]:
    return {"name": "bash", "arguments": {"command": f"echo {text}"}}


class _DropWallTime(gymnasium.Wrapper[Any, Any, Any, Any]):
    """shell-v0's step info carries ``duration_ms``, the command's wall time: check_env compares two
    steps' infos for determinism, and wall time never repeats. Everything else is checked as is."""

    def step(self, action: Any) -> Any:
        obs, rew, term, trunc, info = self.env.step(action)
        wall = info.pop("duration_ms", None)  # absent when no command ran (submit)
        assert wall is None or isinstance(wall, (int, float))
        return obs, rew, term, trunc, info


@pytest.mark.parametrize("env_id", list(IMAGES))
def test_check_env(docker_url: str, env_id: str) -> None:
    env: Any = sandgym.gym.make(docker_url, env_id)
    if env_id == "shell-v0":
        env = _DropWallTime(env)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            # the one warning the wrapper itself causes ("different from the unwrapped version")
            warnings.filterwarnings("ignore", message=".*different from the unwrapped version")
            check_env(env, skip_render_check=True)
    finally:
        env.close()


@pytest.mark.parametrize("env_id", list(IMAGES))
@pytest.mark.parametrize("vectoriser", [SyncVectorEnv, AsyncVectorEnv, "make_vec"], ids=["Sync", "Async", "make_vec"])
def test_vector_envs(docker_url: str, env_id: str, vectoriser: Any) -> None:
    if vectoriser == "make_vec":
        envs = sandgym.gym.make_vec(docker_url, env_id, 2)
    else:
        envs = vectoriser([partial(sandgym.gym.make, docker_url, env_id) for _ in range(2)])
    try:
        obs, _ = envs.reset(seed=3)
        assert obs in envs.observation_space and all("/workspace" in o for o in obs)
        obs, rew, term, trunc, _ = envs.step((_bash("héllo-0\\\\nline"), _bash("wörld-1")))
        assert obs in envs.observation_space and not term.any() and not trunc.any() and rew.shape == (2,)
        assert "héllo-0" in obs[0] and "wörld-1" in obs[1], obs
    finally:
        envs.close()
