"""sandgym.rollouts against the real server, with policies that are Python callables or a real HTTP server
in this test speaking the chat-completions format (a small deterministic "model", not a stand-in for sandgym)."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

import sandgym
from sandgym.rollouts import EpisodeContext, OpenAIChatPolicy, group_advantages, rollout_group, rollout_groups

_EXPR = re.compile(r"What is ([-+*/^() \d]*\d[-+*/^() \d]*?)\s*\?")


class ChatModel:
    """Answers chat-completions requests: math-v0 with a boxed or bare number (by the request's seed),
    calculator-tools-v0 with a malformed call on its first turn for some seeds, then calculate, then submit."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    def reply(self, body: dict[str, Any]) -> dict[str, Any]:
        messages, seed, tools = body["messages"], body["seed"], body.get("tools")
        if not tools:
            content = "\\boxed{7}" if seed % 2 == 0 else "7"
            return {"role": "assistant", "content": content}
        last = messages[-1]
        turn = sum(1 for m in messages if m["role"] == "assistant")

        def call(name: str, args: str) -> dict[str, Any]:
            return {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": f"call-{seed}-{turn}", "type": "function", "function": {"name": name, "arguments": args}}
                ],
            }

        if turn == 0 and seed % 3 == 0:
            return call("calculate", '{"expression": ')  # invalid JSON: the adapter answers, the episode goes on
        if last["role"] == "user" or (last["role"] == "tool" and last["content"].startswith("Error")):
            m = _EXPR.search(next(m["content"] for m in messages if m["role"] == "user"))
            return call("calculate", json.dumps({"expression": m.group(1) if m else "1"}))
        try:
            value = float(last["content"])
        except ValueError:
            value = 0.0
        return call("submit", json.dumps({"answer": value}))


@pytest.fixture
def chat_server() -> Iterator[tuple[str, ChatModel]]:
    model = ChatModel()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            with model.lock:
                model.requests.append(body)
            if self.path != "/v1/chat/completions" or body.get("model") == "broken":
                self.send_response(500)
                self.end_headers()
                self.wfile.write(b'{"error": "model not loaded"}')
                return
            out = json.dumps(
                {
                    "id": "x",
                    "object": "chat.completion",
                    "model": body["model"],
                    "choices": [{"index": 0, "message": model.reply(body), "finish_reason": "stop"}],
                }
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

        def log_message(self, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1", model
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_group_advantages():
    assert group_advantages([1.0, 0.0, 0.0, 1.0]) == pytest.approx([1, -1, -1, 1], abs=1e-5)
    assert group_advantages([0.5, 0.5]) == [0.0, 0.0]
    assert group_advantages([]) == []
    assert group_advantages([1.0, 0.0], scale=False) == [0.5, -0.5]


async def test_http_policy_text_env(url, chat_server):
    base, model = chat_server
    policy = OpenAIChatPolicy(base, "tiny", temperature=0.7, max_tokens=32)
    async with await sandgym.AsyncClient.connect(url) as client:
        group = await rollout_group(client, "math-v0", policy, seed=5, group_size=6, policy_seed=100)
    assert len(group.episodes) == 6 and not group.failed
    for ep in group.episodes:
        assert ep.seed == 5 and ep.policy_seed == 100 + ep.member
        assert ep.terminated and ep.steps == 1 and len(ep.rewards) == 1
        assert ep.return_ == pytest.approx(sum(ep.reward_components.values()))
        boxed = ep.policy_seed % 2 == 0
        assert ep.reward_components["format"] == pytest.approx(0.1 if boxed else 0.0)
        assert [m["role"] for m in ep.messages] == ["system", "user", "assistant", "user"]
    assert sum(a for a in (e.advantage for e in group.episodes) if a is not None) == pytest.approx(0, abs=1e-6)
    assert len({e.advantage for e in group.episodes}) == 2  # boxed vs bare: two returns, two advantages
    bodies = [b for b in model.requests if b["model"] == "tiny"]
    assert len(bodies) == 6
    assert all(b["temperature"] == 0.7 and b["max_tokens"] == 32 and "tools" not in b for b in bodies)
    assert all(b["messages"][0]["role"] == "system" for b in bodies)


async def test_http_policy_tool_env_multi_turn(url, chat_server):
    base, model = chat_server
    async with await sandgym.AsyncClient.connect(url, encoding="msgpack") as client:
        group = await rollout_group(client, "calculator-tools-v0", OpenAIChatPolicy(base), seed=9, group_size=4)
    assert not group.failed
    for ep in group.episodes:
        malformed_first = ep.policy_seed % 3 == 0
        assert ep.invalid_actions == (1 if malformed_first else 0)
        assert len(ep.rewards) == (3 if malformed_first else 2)  # [malformed,] calculate, submit
        assert ep.steps == 2 and ep.terminated
        assert ep.return_ == pytest.approx(
            1.0
        )  # seed 9 is "What is 26^3 - 7^5 + 379 * 7?": calculate, then submit its value
        assert ep.return_ == pytest.approx(sum(ep.reward_components.values()))
        for i, m in enumerate(ep.messages):
            if m["role"] == "tool":
                assert m["tool_call_id"] == ep.messages[i - 1]["tool_calls"][0]["id"]
    req = next(b for b in model.requests if b.get("tools"))
    assert req["tool_choice"] == "auto"
    assert {t["type"] for t in req["tools"]} == {"function"}
    assert {t["function"]["name"] for t in req["tools"]} == {"calculate", "submit"}


async def test_policy_endpoint_failure_is_marked_not_scored(url, chat_server):
    base, _ = chat_server
    async with await sandgym.AsyncClient.connect(url) as client:
        group = await rollout_group(client, "math-v0", OpenAIChatPolicy(base, "broken"), seed=1, group_size=3)
        unreachable = await rollout_group(
            client, "math-v0", OpenAIChatPolicy("http://127.0.0.1:9/v1", timeout=5), seed=1, group_size=1
        )
    for ep in group.episodes + unreachable.episodes:
        assert ep.failure is not None and ep.failure.source == "policy"
        assert ep.return_ is None and ep.advantage is None
    assert "HTTP 500" in group.episodes[0].failure.message  # type: ignore[union-attr]
    assert group.returns == [] and group.mean_return is None


async def test_callable_policies_sync_async_and_raising(url):
    def sync_policy(messages, tools, ctx: EpisodeContext):
        return f"\\boxed{{{ctx.rng.randint(0, 3)}}}"

    async def async_policy(messages, tools, ctx: EpisodeContext):
        return {"content": "no box"}

    def raising(messages, tools, ctx):
        raise RuntimeError("out of memory on the GPU")

    pool = await sandgym.AsyncClientPool.connect([url], connections_per_url=2)
    try:
        groups = await rollout_groups(pool, "math-v0", sync_policy, [{"seed": 1}, {"seed": 2}], group_size=3)
        g2 = await rollout_group(pool, "math-v0", async_policy, seed=1, group_size=2)
        g3 = await rollout_group(pool, "math-v0", raising, seed=1, group_size=2)
    finally:
        await pool.close()
    assert [g.seed for g in groups] == [1, 2]
    assert all(e.ok and e.reward_components["format"] == pytest.approx(0.1) for g in groups for e in g.episodes)
    assert all(e.ok and e.return_ == 0.0 for e in g2.episodes)
    assert all(
        e.failure is not None and e.failure.source == "policy" and "out of memory" in e.failure.message
        for e in g3.episodes
    )


async def test_options_tasks_and_server_errors(url):
    async with await sandgym.AsyncClient.connect(url) as client:
        good = await rollout_group(
            client, "wordle-v0", lambda m, t, c: "crane", options={"word": "crane"}, seed=10, group_size=3
        )
        bad = await rollout_group(client, "wordle-v0", lambda m, t, c: "crane", options={"word": "zzzzz"}, group_size=2)
    assert [e.seed for e in good.episodes] == [10, 11, 12]  # options name the task: seeds differ
    assert all(e.ok and e.terminated and e.return_ and e.return_ > 0 for e in good.episodes)
    for ep in bad.episodes:
        assert ep.failure is not None and ep.failure.source == "server" and ep.failure.code == "INVALID_ARGUMENT"
        assert not ep.failure.retryable and ep.return_ is None


async def test_connection_lost_mid_episode_is_an_infrastructure_failure(servers):
    server = servers.fresh()
    calls = 0

    def policy(messages, tools, ctx):
        nonlocal calls
        calls += 1
        if calls == 2:
            server.kill()  # the server dies while the second answer is in flight
        return "slate"

    async with await sandgym.AsyncClient.connect(server.url) as client:
        group = await rollout_group(client, "wordle-v0", policy, options={"word": "crane"}, group_size=1, max_turns=4)
    ep = group.episodes[0]
    assert ep.failure is not None and ep.failure.source == "connection" and ep.failure.retryable
    assert ep.return_ is None and ep.advantage is None
    assert len(ep.rewards) == 1  # the turn before the loss was recorded, and the episode is still not a sample


async def test_max_turns_and_bad_arguments(url):
    async with await sandgym.AsyncClient.connect(url) as client:
        group = await rollout_group(
            client, "wordle-v0", lambda m, t, c: "slate", options={"word": "crane"}, group_size=1, max_turns=2
        )
        ep = group.episodes[0]
        assert ep.ok and len(ep.rewards) == 2 and not ep.terminated and not ep.truncated
        with pytest.raises(ValueError):
            await rollout_group(client, "math-v0", lambda m, t, c: "", group_size=0)
        with pytest.raises(ValueError, match="discrete"):  # not a chat env: a usage error, raised
            await rollout_group(client, "test/noop-v0", lambda m, t, c: "", group_size=1)


def test_lost_connection_codes_are_infrastructure_never_the_policys():
    # PROTOCOL.md §11a: RESUME_EXPIRED (the grace period passed; the sessions were closed) and REPLY_LOST (the
    # request ran, its reply went with the connection) are the connection's: rerun the episode, never score it.
    from sandgym.rollouts import Failure

    expired = Failure.from_error(sandgym.ResumeExpiredError("grace passed", code="RESUME_EXPIRED"))
    lost = Failure.from_error(sandgym.SandgymError("reply lost", code="REPLY_LOST"))
    invalid = Failure.from_error(sandgym.SandgymError("bad argument", code="INVALID_ARGUMENT"))
    assert (expired.source, expired.code, expired.retryable) == ("server", "RESUME_EXPIRED", True)
    assert (lost.code, lost.retryable) == ("REPLY_LOST", True)
    assert not invalid.retryable
