"""sandgym.chat over the sandboxed tool envs (shell-v0, code-v0) under Docker: the conversation a model sees,
malformed calls answered without ending the episode, observations as tool messages with the calls' ids.
Skipped without Docker or the images (the reason named), failing instead under SANDGYM_REQUIRE_DOCKER=1."""

from __future__ import annotations

from typing import Any

import pytest

import sandgym
from sandgym.chat import SYSTEM_PROMPT_TOOLS, AsyncChatEnv


def _call(call_id: str, name: str, arguments: Any) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}],
    }


@pytest.mark.parametrize("env_id", ["shell-v0", "code-v0"])
async def test_sandboxed_tool_env_as_chat(docker_url: str, env_id: str) -> None:
    async with await sandgym.AsyncClient.connect(docker_url) as client:
        env = await client.make(env_id)
        chat = AsyncChatEnv(env)
        try:
            opening = await chat.reset(seed=1)
            assert opening[0] == {"role": "system", "content": SYSTEM_PROMPT_TOOLS}
            assert env.spec["description"] not in opening[1]["content"]
            names = {t["function"]["name"] for t in chat.tools or []}
            assert {"bash", "submit"} <= names
            r = await chat.step(_call("c1", "bash", '{"command": "echo sandgym-chat"}'))
            assert r.steps == 1 and not r.done
            assert r.messages[0]["tool_call_id"] == "c1" and "sandgym-chat" in r.messages[0]["content"]
            for bad in (
                _call("c2", "bash", '{"command": '),
                _call("c3", "rm_rf", "{}"),
                {"role": "assistant", "content": "I will now run ls"},
            ):
                r = await chat.step(bad)
                assert r.steps == 0 and r.invalid == 1 and not r.done
                assert r.messages[0]["content"].startswith("Error: ")
            r = await chat.step(_call("c4", "submit", "{}"))
            assert r.terminated and r.messages[0]["tool_call_id"] == "c4"
            if "reward_components" in r.info:
                assert r.reward == pytest.approx(sum(r.info["reward_components"].values()))
        finally:
            await chat.close()
