"""The Python client against a real scheduling server (PROTOCOL.md §6a): shell-v0 under Docker, a pool of
2 sandboxes, so waiting is real and cheap. Order is driven by the events the client receives (queued,
admitted, session_closed), never by sleeps. Covers: the queued/admitted callbacks of a waiting reset, a
queue deadline (CAPACITY, reason queue_timeout), a class the client was not granted, a group admitted all
or nothing with its group_complete, a preempted episode rerun by sandgym.rollouts, the blocking client,
and hostile values the server must refuse. Skipped without Docker or the images (the reason named),
failing instead under SANDGYM_REQUIRE_DOCKER=1."""

from __future__ import annotations

import asyncio
import json
import os
import threading
from collections.abc import Iterator
from typing import Any

import pytest

import sandgym
from _server import docker_server
from sandgym import QueueProgress, Scheduling
from sandgym.rollouts import rollout_episode

CAPACITY = 2
CONFIG = {
    "pools": {"max_total": CAPACITY},
    "scheduling": {
        # A server without tokens: every connection has the default grant.
        "default_grant": {"classes": ["eval", "train", "background"]},
        "preempt_grace_ms": 0,
        "max_group_size": 4,
    },
}
WAIT = 120.0  # a generous bound for events on a loaded machine; the order never depends on it


@pytest.fixture(scope="module")
def sched_url() -> Iterator[str]:
    srv = docker_server("the scheduler admits sandboxes, which need Docker here", CONFIG)
    try:
        yield srv.url
    finally:
        srv.stop()


async def _holding(client: sandgym.AsyncClient, n: int, **make: Any) -> list[sandgym.AsyncEnv]:
    """n sessions that each hold a sandbox (reset done)."""
    envs = [await client.make("shell-v0", **make) for _ in range(n)]
    for i, e in enumerate(envs):
        await e.reset(seed=i)
    return envs


def _bash(cmd: str) -> dict[str, Any]:
    return {"name": "bash", "arguments": {"command": cmd}}


async def test_the_server_offers_scheduling_and_the_grant(sched_url: str) -> None:
    async with await sandgym.AsyncClient.connect(sched_url) as client:
        assert client.capabilities.get("scheduling") is True
        assert client.limits["priority_classes"] == ["eval", "train", "background"]
        assert client.limits["max_group_size"] == CAPACITY  # the configured 4, capped by what the pool can ever hold
        assert isinstance(client.limits["max_queue_timeout_ms"], int)


async def test_a_waiting_reset_gets_queued_then_admitted(sched_url: str) -> None:
    async with await sandgym.AsyncClient.connect(sched_url) as client:
        holders = await _holding(client, CAPACITY)
        waiter = await client.make("shell-v0")
        seen: list[QueueProgress] = []
        queued = asyncio.Event()

        def on_queue(p: QueueProgress) -> None:
            seen.append(p)
            if p.event == "queued":
                queued.set()

        reset = asyncio.create_task(waiter.reset(seed=7, on_queue=on_queue))
        await asyncio.wait_for(queued.wait(), WAIT)
        assert not reset.done()
        first = seen[0]
        assert first.event == "queued" and first.position == 0 and first.units_ahead == 0
        assert first.priority == "train"  # the default class
        assert first.estimated_wait_ms is None or first.estimated_wait_ms >= 0
        await holders[0].close()  # frees one sandbox: the waiter is admitted
        obs, info = await asyncio.wait_for(reset, WAIT)
        assert "sandbox" in info and isinstance(obs, str)
        assert seen[-1].event == "admitted" and seen[-1].waited_ms is not None and seen[-1].waited_ms >= 0
        assert all(p.request == first.request for p in seen)
        # The admitted session works.
        _obs, _r, _term, _trunc, step_info = await waiter.step(_bash("echo ok > f && cat f"))
        assert step_info["exit_code"] == 0
        await waiter.close()
        await holders[1].close()


async def test_a_queue_deadline_answers_capacity_with_its_reason(sched_url: str) -> None:
    async with await sandgym.AsyncClient.connect(sched_url) as client:
        holders = await _holding(client, CAPACITY)
        late = await client.make("shell-v0")
        with pytest.raises(sandgym.CapacityError) as ei:
            await late.reset(seed=1, scheduling=Scheduling(queue_timeout_ms=300))
        assert ei.value.details.get("reason") == "queue_timeout"
        assert ei.value.retryable
        # Nothing was lost: the holders still work, and the session resets once a sandbox frees.
        await holders[0].close()
        await late.reset(seed=1, scheduling=Scheduling(queue_timeout_ms=60_000))
        for e in (late, holders[1]):
            await e.close()


async def test_a_class_that_was_not_granted_is_a_typed_error(sched_url: str) -> None:
    async with await sandgym.AsyncClient.connect(sched_url) as client:
        with pytest.raises(sandgym.InvalidArgumentError) as ei:
            env = await client.make("shell-v0", scheduling=Scheduling(priority="train-batch-closing"))
            await env.reset(seed=1)
        assert ei.value.details.get("allowed") == ["eval", "train", "background"]
        with pytest.raises(sandgym.InvalidArgumentError):
            await client.group("shell-v0", 2, scheduling=Scheduling(priority="no-such-class"))


@pytest.mark.parametrize(
    "params",
    [
        {"priority": "Not A Class"},
        {"priority": ""},
        {"queue_timeout_ms": -1},
        {"queue_timeout_ms": 1.5},
        {"preemptible": "yes"},
        {"priority": "x" * 65},
    ],
)
async def test_hostile_scheduling_fields_sent_raw_are_refused_and_lose_nothing(
    sched_url: str, params: dict[str, Any]
) -> None:
    # Sent raw (the typed API refuses most of them before sending): the server must refuse each with a typed error.
    async with await sandgym.AsyncClient.connect(sched_url) as client:
        with pytest.raises(sandgym.SandgymError) as ei:
            await client.request("make", {"env_id": "shell-v0", **params})
        assert ei.value.code in ("INVALID_MESSAGE", "INVALID_ARGUMENT")
        assert await client.ping() >= 0  # the connection survives


@pytest.mark.parametrize("size", [CAPACITY + 1, 5, 65_536, 10**6])
async def test_groups_above_the_limit_are_refused(sched_url: str, size: int) -> None:
    async with await sandgym.AsyncClient.connect(sched_url) as client:
        with pytest.raises(sandgym.SandgymError) as ei:
            await client.request("group", {"env_id": "shell-v0", "size": size})
        assert ei.value.code in ("INVALID_MESSAGE", "INVALID_ARGUMENT")
        assert client.open_sessions == 0


async def test_a_group_is_admitted_all_at_once_and_completes_as_one(sched_url: str) -> None:
    async with await sandgym.AsyncClient.connect(sched_url) as client:
        (holder,) = await _holding(client, 1)  # one of the two sandboxes is taken: a group of 2 must wait
        queued = asyncio.Event()
        events: list[QueueProgress] = []

        def on_queue(p: QueueProgress) -> None:
            events.append(p)
            if p.event == "queued":
                queued.set()

        making = asyncio.create_task(client.group("shell-v0", CAPACITY, on_queue=on_queue))
        await asyncio.wait_for(queued.wait(), WAIT)
        assert not making.done()  # never half admitted
        await holder.close()
        group = await asyncio.wait_for(making, WAIT)
        assert len(group) == CAPACITY and len(set(group.sessions)) == CAPACITY
        assert events[-1].event == "admitted"
        for i, env in enumerate(group):
            await env.reset(seed=i, options={"task_id": "create-file"})
            await env.step(_bash("echo 'hello world' > hello.txt"))
            _obs, reward, terminated, _trunc, _info = await env.step({"name": "submit", "arguments": {}})
            assert terminated and reward == 1.0
        assert not group.complete
        await group.envs[0].close()
        assert not group.complete
        await group.close()
        done = await group.wait_complete(WAIT)
        assert group.complete and sorted(done) == sorted(group.sessions)


async def test_a_preempted_episode_is_rerun_and_scored(sched_url: str) -> None:
    """A preemptible background episode holds a sandbox while its policy thinks; an eval reset arrives with
    the pool full; the scheduler reclaims the background sandbox (PREEMPTED, never a reward); the rollout
    reruns the episode once the eval session is done, and that run is graded."""
    async with (
        await sandgym.AsyncClient.connect(sched_url) as client,
        await sandgym.AsyncClient.connect(sched_url) as evaluator,
    ):
        (holder,) = await _holding(client, 1, scheduling=Scheduling(priority="train"))
        preempted: list[dict[str, Any]] = []

        async def make() -> sandgym.AsyncEnv:
            return await client.make("shell-v0", scheduling=Scheduling(priority="background", preemptible=True))

        async def policy(messages: list[dict[str, Any]], tools: Any, ctx: Any) -> dict[str, Any]:
            if ctx.turn == 0 and not preempted:
                # While this episode "thinks", evaluation needs a sandbox: it takes this one.
                ev = await evaluator.make("shell-v0", scheduling=Scheduling(priority="eval"))
                await asyncio.wait_for(ev.reset(seed=3), WAIT)
                preempted.append({"eval": ev.session})
                await ev.close()
            if ctx.turn == 0:
                return _call("bash", {"command": "echo 'hello world' > hello.txt"})
            return _call("submit", {})

        ep = await rollout_episode(
            make, policy, seed=1, options={"task_id": "create-file"}, rerun_infra_failures=1, max_turns=4
        )
        assert preempted, "the eval reset was never admitted"
        assert ep.attempts == 2 and [f.code for f in ep.rerun_failures] == ["PREEMPTED"], ep.rerun_failures
        assert ep.ok and ep.return_ == 1.0
        await holder.close()


def _call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": f"c-{name}", "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
        ],
    }


def test_the_blocking_client_waits_in_the_queue_and_groups(sched_url: str) -> None:
    with sandgym.Client(sched_url, scheduling=Scheduling(priority="train")) as client:
        holders = [client.make("shell-v0") for _ in range(CAPACITY)]
        for i, h in enumerate(holders):
            h.reset(seed=i)
        waiter = client.make("shell-v0")
        queued = threading.Event()
        seen: list[QueueProgress] = []

        def on_queue(p: QueueProgress) -> None:  # runs on the reading thread: must not call the client
            seen.append(p)
            if p.event == "queued":
                queued.set()

        def free_one() -> None:
            assert queued.wait(WAIT)
            holders[0].close()

        t = threading.Thread(target=free_one)
        t.start()
        _obs, info = waiter.reset(seed=5, on_queue=on_queue)
        t.join(WAIT)
        assert "sandbox" in info and seen[0].event == "queued" and seen[-1].event == "admitted"
        waiter.close()
        holders[1].close()
        with client.group("shell-v0", CAPACITY) as group:
            assert len(group) == CAPACITY
        assert sorted(group.wait_complete(WAIT)) == sorted(group.sessions)


def test_the_training_doc_scheduling_snippet_runs_as_written(sched_url: str) -> None:
    """Docs stay true: docs/TRAINING.md's scheduling snippet, run with this server's URL and groups of the
    pool's size (the page says 8)."""
    import re
    import subprocess
    import sys

    from _server import REPO

    doc = (REPO / "docs" / "TRAINING.md").read_text("utf-8")
    blocks = [b for b in re.findall(r"```py\n(.*?)\n```", doc, flags=re.S) if "Scheduling(" in b]
    assert len(blocks) == 1
    code = blocks[0].replace('url = "ws://127.0.0.1:8765/v2/ws"', f'url = "{sched_url}"')
    code = code.replace('client.group("shell-v0", 8)', f'client.group("shell-v0", {CAPACITY})')
    code = code.replace("group_size=8", f"group_size={CAPACITY}")
    assert sched_url in code and f'client.group("shell-v0", {CAPACITY})' in code and f"group_size={CAPACITY}" in code
    env = {**os.environ, "PYTHONPATH": str(REPO / "clients" / "python" / "src")}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=600, env=env, check=False
    )
    assert out.returncode == 0, out.stderr[-3000:]
    lines = out.stdout.strip().splitlines()
    # on_queue printed nothing (nobody waited) or queued/admitted lines; then the rollout's (return, attempts)
    assert lines[-1] == repr([(0.0, 1)] * CAPACITY), out.stdout


async def test_waiting_for_a_group_fails_when_the_connection_goes(sched_url: str) -> None:
    client = await sandgym.AsyncClient.connect(sched_url)
    group = await client.group("shell-v0", 1)
    await client.close()
    with pytest.raises(sandgym.ConnectionClosedError):
        await group.wait_complete(WAIT)
    assert not group.complete


async def test_a_failing_on_queue_callback_does_not_break_the_request(sched_url: str) -> None:
    async with await sandgym.AsyncClient.connect(sched_url) as client:
        holders = await _holding(client, CAPACITY)
        waiter = await client.make("shell-v0")
        calls: list[str] = []

        async def boom(p: QueueProgress) -> None:
            calls.append(p.event)
            if p.event == "queued" and len(calls) == 1:
                await holders[0].close()  # a coroutine callback may use the client
            raise RuntimeError("a user's callback failed")

        _obs, info = await asyncio.wait_for(waiter.reset(seed=2, on_queue=boom), WAIT)
        assert "sandbox" in info and calls[0] == "queued" and calls[-1] == "admitted"
        for e in (waiter, holders[1]):
            await e.close()


async def test_a_pool_places_a_group_on_one_connection(sched_url: str) -> None:
    async with await sandgym.AsyncClientPool.connect(sched_url, connections_per_url=2) as pool:
        async with await pool.group("shell-v0", CAPACITY) as group:
            assert len({id(e.client) for e in group}) == 1
            await group.envs[0].reset(seed=1)
        assert sorted(await group.wait_complete(WAIT)) == sorted(group.sessions)
