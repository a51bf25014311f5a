"""sandgym.chat: the chat adapter over the shared protocol vectors and against live envs of the real server."""

from __future__ import annotations

import json
from typing import Any

import pytest

import sandgym
from conftest import VECTORS
from sandgym.chat import SYSTEM_PROMPT_TEXT, SYSTEM_PROMPT_TOOLS, AsyncChatEnv, ChatCore, ChatEnv, openai_tools


def _transcript(name: str) -> dict[str, Any]:
    return json.loads((VECTORS / "transcripts" / f"{name}.json").read_text("utf-8"))


def _call(name: str, arguments: Any, call_id: str | None = "call_1") -> dict[str, Any]:
    call: dict[str, Any] = {"type": "function", "function": {"name": name, "arguments": arguments}}
    if call_id is not None:
        call["id"] = call_id
    return call


def _assistant(*calls: dict[str, Any], content: str | None = None) -> dict[str, Any]:
    msg: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        msg["tool_calls"] = list(calls)
    return msg


# ------------------------------------------------------------------ the shared vectors, live


async def test_tool_calls_vector_replayed_through_chat(url):
    """Every step of transcripts/tool-calls.json, sent as an assistant message (arguments as the JSON string
    OpenAI sends): well-formed calls get the transcript's observation as a tool message with the call's id;
    the calls the server refuses with INVALID_ACTION get an error tool message and the episode goes on."""
    vector = _transcript("tool-calls")
    async with await sandgym.AsyncClient.connect(url) as client:
        chat = AsyncChatEnv(await client.make("test/tools-v0"))
        opening = await chat.reset()
        reset_expect = next(s for s in vector["steps"] if s["send"]["type"] == "reset")["expect"]["result"]
        assert opening[-1] == {"role": "user", "content": reset_expect["observation"]}
        assert opening[0] == {"role": "system", "content": SYSTEM_PROMPT_TOOLS}
        names = {t["function"]["name"] for t in chat.tools or []}
        assert {"echo", "add", "finish"} <= names
        n = 0
        episodes = 0
        for step in vector["steps"]:
            kind = step["send"]["type"]
            if kind == "reset":
                episodes += 1
                if episodes > 1:
                    assert (await chat.reset())[-1]["content"] == step["expect"]["result"]["observation"]
                continue
            if kind != "step":
                continue
            n += 1
            if step["expect"]["type"] == "error" and step["expect"]["error"]["code"] == "RESET_NEEDED":
                assert chat.done
                with pytest.raises(sandgym.ResetNeededError):
                    await chat.step(_assistant(_call(step["send"]["action"]["name"], "{}", f"id-{n}")))
                continue
            action = step["send"]["action"]
            args = action["arguments"]
            # arguments always reach the model's side as a JSON string; the transcript's string-arguments case
            # (the wire refuses a string) is exactly what the adapter parses for the server
            wire_args = args if isinstance(args, str) else json.dumps(args)
            res = await chat.step(_assistant(_call(action["name"], wire_args, f"id-{n}")))
            assert len(res.messages) == 1
            reply = res.messages[0]
            assert reply["role"] == "tool" and reply["tool_call_id"] == f"id-{n}"
            expect = step["expect"]
            if expect["type"] == "result":
                assert reply["content"] == expect["result"]["observation"]
                assert res.reward == expect["result"]["reward"] and res.steps == 1 and res.invalid == 0
                assert res.terminated == expect["result"]["terminated"]
            elif isinstance(args, str):
                assert res.invalid == 0 and res.steps == 1  # the adapter parsed it: the server ran it
            else:
                assert expect["error"]["code"] == "INVALID_ACTION"
                assert res.invalid == 1 and res.steps == 0 and not res.done
                assert reply["content"].startswith("Error: ")
        assert chat.done and episodes == 2 and n >= 8
        # the conversation alternates assistant message / its tool answers, ids matching
        for i, msg in enumerate(chat.messages):
            if msg["role"] == "tool":
                prev = next(m for m in reversed(chat.messages[:i]) if m["role"] == "assistant")
                assert msg["tool_call_id"] in {c["id"] for c in prev["tool_calls"]}
        await chat.close()


def test_openai_tools_format_matches_vector_specs():
    """openai_tools over the tools a transcript declares is the OpenAI function format, schema untouched."""
    tools = [
        {
            "name": "echo",
            "description": "Echo text",
            "parameters": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
        },
        {"name": "submit"},
    ]
    out = openai_tools(tools)
    assert out[0] == {"type": "function", "function": tools[0]}
    assert out[1] == {
        "type": "function",
        "function": {"name": "submit", "parameters": {"type": "object", "properties": {}}},
    }
    assert openai_tools(None) == []


# ------------------------------------------------------------------ malformed model output (no I/O)

TOOLS_SPEC = {
    "id": "x",
    "description": "GRADER INTERNALS: hidden tests in /grader",
    "action_space": {
        "type": "tool_call",
        "tools": [
            {
                "name": "add",
                "parameters": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}},
            },
            {"name": "finish", "parameters": {"type": "object"}},
        ],
    },
}


def test_parse_accepts_string_and_object_arguments():
    core = ChatCore(TOOLS_SPEC)
    for args in ('{"a": 1, "b": 2}', {"a": 1, "b": 2}):
        reply = core.parse(_assistant(_call("add", args)))
        assert reply.errors == []
        assert reply.actions[0].action == {"name": "add", "arguments": {"a": 1, "b": 2}}
        assert reply.actions[0].tool_call_id == "call_1"
    assert core.parse(_assistant(_call("finish", ""))).actions[0].action == {"name": "finish", "arguments": {}}
    assert "GRADER" not in json.dumps(core.initial_messages("task"))


@pytest.mark.parametrize(
    ("message", "role", "needle"),
    [
        (_assistant(_call("add", '{"a": 1,')), "tool", "not valid JSON"),
        (_assistant(_call("add", "[1, 2]")), "tool", "must be a JSON object"),
        (_assistant(_call("rm", "{}")), "tool", "unknown tool 'rm'"),
        (_assistant(_call("add", "{}", call_id=None)), "user", "has no id"),
        (_assistant(content="I think the answer is 3"), "user", "No tool was called"),
        (_assistant(content=None), "user", "No tool was called"),
        (_assistant({"id": "c", "type": "function", "function": "add"}), "tool", "unknown tool"),
        (_assistant("not a call"), "user", "must be an object"),  # type: ignore[arg-type]
    ],
)
def test_parse_malformed(message, role, needle):
    reply = ChatCore(TOOLS_SPEC).parse(message)
    assert reply.actions == []
    assert len(reply.errors) == 1
    err = reply.errors[0]
    assert err["role"] == role and needle in err["content"]
    if role == "tool":
        assert err["tool_call_id"] == message["tool_calls"][0]["id"]


def test_parse_rejects_non_mapping_and_non_chat_spaces():
    with pytest.raises(TypeError):
        ChatCore(TOOLS_SPEC).parse("text")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="discrete"):
        ChatCore({"id": "d", "action_space": {"type": "discrete", "n": 2}})


def test_text_env_parse():
    core = ChatCore({"id": "m", "action_space": {"type": "text", "max_length": 10}})
    assert core.tools is None and core.system_prompt == SYSTEM_PROMPT_TEXT
    assert core.parse({"role": "assistant", "content": "42"}).actions[0].action == {"text": "42"}
    parts = {"role": "assistant", "content": [{"type": "text", "text": "4"}, {"type": "text", "text": "2"}]}
    assert core.parse(parts).actions[0].action == {"text": "42"}
    reply = core.parse(_assistant(_call("add", "{}")))
    assert reply.actions == [] and "plain text" in reply.errors[0]["content"]
    assert ChatCore({"id": "m", "action_space": {"type": "text"}}, system_prompt="").initial_messages("q") == [
        {"role": "user", "content": "q"}
    ]


# ------------------------------------------------------------------ live envs


async def test_live_malformed_calls_keep_the_episode(url):
    async with await sandgym.AsyncClient.connect(url, encoding="msgpack") as client:
        chat = AsyncChatEnv(await client.make("test/tools-v0"))
        await chat.reset()
        bad = [
            _assistant(_call("echo", '{"text": ')),
            _assistant(_call("nope", "{}")),
            _assistant(_call("echo", '{"text": "x"}', call_id=None)),
            _assistant(content="just text"),
            _assistant(_call("echo", '{"text": 5}')),  # the server's INVALID_ACTION
        ]
        for msg in bad:
            res = await chat.step(msg)
            assert res.invalid == 1 and res.steps == 0 and not res.done and res.reward == 0
            assert res.messages[0]["content"].startswith("Error: ")
        # two calls in one message: both run, in order, each answered with its id
        res = await chat.step(_assistant(_call("echo", '{"text": "a"}', "c1"), _call("add", {"a": 2, "b": 40}, "c2")))
        assert [(m["tool_call_id"], m["content"]) for m in res.messages] == [("c1", "a"), ("c2", "42")]
        assert res.steps == 2
        # a malformed call beside a good one: the good one runs
        res = await chat.step(
            _assistant(
                _call("bogus", "{}", "c3"),
                _call("finish", {"answer": 42}, "c4"),
                _call("echo", '{"text": "late"}', "c5"),
            )
        )
        by_id = {m["tool_call_id"]: m["content"] for m in res.messages}
        assert by_id["c4"] == "done" and "unknown tool" in by_id["c3"] and "not run" in by_id["c5"]
        assert res.terminated and res.reward == 1 and res.steps == 1 and res.invalid == 1
        await chat.close()


async def test_live_math_text_env(url):
    async with await sandgym.AsyncClient.connect(url) as client:
        env = await client.make("math-v0")
        chat = AsyncChatEnv(env)
        opening = await chat.reset(seed=3)
        assert opening[0]["content"] == SYSTEM_PROMPT_TEXT
        assert env.spec["description"] not in json.dumps(opening)  # the author-facing description stays out
        assert "\\boxed{}" in opening[1]["content"]
        res = await chat.step({"role": "assistant", "content": "\\boxed{-123456789}"})
        assert res.terminated and res.steps == 1
        assert res.info["reward_components"]["format"] == pytest.approx(0.1)
        assert res.reward == pytest.approx(sum(res.info["reward_components"].values()))
        assert res.messages == [{"role": "user", "content": chat.messages[-1]["content"]}]
        # the right answer, read from the first episode's info, scores 1 on the same seed
        await chat.reset(seed=3)
        res2 = await chat.step({"role": "assistant", "content": f"\\boxed{{{res.info['expected']}}}"})
        assert res2.reward == pytest.approx(1.0)
        await chat.close()


def test_live_wordle_sync(url):
    with sandgym.Client(url) as client, ChatEnv(client.make("wordle-v0")) as chat:
        chat.reset(options={"word": "crane"})
        first = chat.step({"role": "assistant", "content": "slate"})
        assert first.steps == 1 and not first.done and first.messages[0]["role"] == "user"
        assert "Error" not in first.messages[0]["content"]
        # a tool call to a text env: explained, not sent
        res = chat.step(_assistant(_call("guess", "{}")))
        assert res.steps == 0 and res.invalid == 1 and "plain text" in res.messages[0]["content"]
        win = chat.step({"role": "assistant", "content": "crane"})
        assert win.terminated and win.reward > 0
        roles = [m["role"] for m in chat.messages]
        assert roles == ["system", "user", "assistant", "user", "assistant", "user", "assistant", "user"]


def test_live_calculator_tools_sync(url):
    with sandgym.Client(url) as client:
        chat = ChatEnv(client.make("calculator-tools-v0"))
        opening = chat.reset(seed=11)
        assert opening[0]["content"] == SYSTEM_PROMPT_TOOLS
        names = [t["function"]["name"] for t in chat.tools or []]
        assert names == ["calculate", "submit"]
        r = chat.step(_assistant(_call("calculate", '{"expression": "2+3"}', "k1")))
        assert r.messages[0]["tool_call_id"] == "k1" and r.messages[0]["content"].strip() == "5"
        r = chat.step(_assistant(_call("submit", {"answer": 0}, "k2")))
        assert r.terminated and r.messages[0]["tool_call_id"] == "k2"
        assert set(r.info["reward_components"]) and r.reward == pytest.approx(sum(r.info["reward_components"].values()))
        chat.close()


async def test_infrastructure_errors_are_raised_not_messages(url):
    """SANDBOX_ERROR (test/sandbox-fail-v0) propagates as the typed error: never a message or a reward."""
    async with await sandgym.AsyncClient.connect(url) as client:
        env = await client.make("test/sandbox-fail-v0")
        # the fixture's actions are discrete; its reset fails whatever the action space, so read it as text
        env.spec["action_space"] = {"type": "text", "max_length": 8}
        chat = AsyncChatEnv(env)
        with pytest.raises(sandgym.SandboxError):
            await chat.reset()
        assert chat.messages == []
