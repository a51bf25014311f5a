"""The clients against the real server CLI on a real socket."""

from __future__ import annotations

import asyncio
import json
import threading
import time

import pytest
from websockets.asyncio.client import connect as ws_connect

import sandgym
from sandgym import AsyncClient, AsyncClientPool, Client, ClientPool, codec
from sandgym._core import PROTOCOL_VERSION

ENCODINGS = ["json", "msgpack"]


async def _eventually(pred, timeout: float = 10.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        await asyncio.sleep(0.02)
    return bool(pred())


@pytest.fixture(params=ENCODINGS)
def encoding(request) -> str:
    return request.param


async def test_episode_and_list_envs(url, encoding):
    async with await AsyncClient.connect(url, encoding=encoding, client_name="pytest") as client:
        assert client.protocol_version == PROTOCOL_VERSION
        assert client.server_info["name"] == "sandgym"
        assert client.capabilities["batch"] is True
        ids = [e["id"] for e in await client.list_envs()]
        for env_id in ("math-v0", "wordle-v0", "calculator-tools-v0", "test/counter-v0", "test/noop-v0"):
            assert env_id in ids
        async with await client.make("test/counter-v0") as env:
            assert env.spec["id"] == "test/counter-v0"
            assert env.action_space == {"type": "discrete", "n": 2}
            obs, info = await env.reset(seed=3)
            assert (obs, info) == (0, {})
            steps = [await env.step(1) for _ in range(3)]
            assert steps[-1] == (3, 1.0, True, False, {})
            assert isinstance(steps[0][1], float)
            with pytest.raises(sandgym.ResetNeededError) as ei:
                await env.step(1)
            assert ei.value.scope == "session" and ei.value.retryable is False
        assert env.closed
        await env.close()  # idempotent
        assert await client.ping() > 0


async def test_truncation_and_dict_env(url, encoding):
    async with await AsyncClient.connect(url, encoding=encoding) as client:
        env = await client.make("test/truncate-v0")
        await env.reset()
        out = [await env.step(1) for _ in range(3)]
        assert out[-1][2:4] == (False, True)
        with pytest.raises(sandgym.ResetNeededError):
            await env.step(1)
        d = await client.make("test/dict-v0")
        assert await d.reset(seed=1) == ({"position": [0, 0], "label": ""}, {})
        import numpy as np

        obs, r, _term, _trunc, _ = await d.step({"move": np.array([0.5, -1.0]), "say": "hi"})
        assert obs == {"position": [0.5, -1], "label": "hi"} and r == 1.0


async def test_tools_env(url, encoding):
    async with await AsyncClient.connect(url, encoding=encoding) as client:
        env = await client.make("test/tools-v0")
        assert [t["name"] for t in env.tools] == ["echo", "add", "finish"]
        assert (await env.reset())[0] == "ready"
        assert (await env.step({"name": "add", "arguments": {"a": 40, "b": 2}}))[0] == "42"
        with pytest.raises(sandgym.InvalidActionError) as ei:
            await env.step({"name": "echo", "arguments": {"text": 1}})
        assert ei.value.details["path"] == "/arguments/text"
        obs, r, term, _, _ = await env.step({"name": "finish", "arguments": {"answer": 42}})
        assert (obs, r, term) == ("done", 1.0, True)


@pytest.mark.parametrize("n", [300])
async def test_hundreds_of_concurrent_episodes_on_one_connection(url, encoding, n):
    async with await AsyncClient.connect(url, encoding=encoding) as client:

        async def episode(i: int) -> list:
            env = await client.make("test/counter-v0")
            obs, _ = await env.reset(seed=i)
            trace = [obs]
            done = False
            while not done:
                obs, _r, term, trunc, _ = await env.step(1)
                trace.append(obs)
                done = term or trunc
            await env.close()
            return trace

        traces = await asyncio.gather(*(episode(i) for i in range(n)))
        assert all(t == [0, 1, 2, 3] for t in traces)
        assert client.pending == 0


async def test_concurrency_does_not_serialize(url):
    # 50 sessions each sleeping 300 ms server-side: concurrent, so far below 50 * 0.3 s.
    async with await AsyncClient.connect(url) as client:
        envs = await asyncio.gather(*(client.make("test/slow-v0", delay_ms=300) for _ in range(50)))
        await asyncio.gather(*(e.reset() for e in envs))
        t0 = time.perf_counter()
        res = await asyncio.gather(*(e.step(0) for e in envs))
        elapsed = time.perf_counter() - t0
        assert len(res) == 50 and elapsed < 5.0, elapsed


async def test_batch(url, encoding):
    async with await AsyncClient.connect(url, encoding=encoding) as client:
        a = await client.make("test/counter-v0")
        b = await client.make("test/counter-v0")
        out = await client.batch(
            [
                {"type": "reset", "env": a, "seed": 1},
                {"type": "step", "env": a, "action": 1},
                {"type": "step", "session": b.session, "action": 1},  # never reset
                {"type": "close", "env": b},
            ]
        )
        assert out[0]["observation"] == 0
        assert out[1]["observation"] == 1 and out[1]["reward"] == 1
        assert isinstance(out[2], sandgym.ResetNeededError)
        assert out[3] == {}
        many = await client.step_many([a, a], [1, 1])
        assert [m[0] for m in many] == [2, 3]


# ------------------------------------------------------------------ error mapping


async def test_request_scoped_errors(url, encoding):
    async with await AsyncClient.connect(url, encoding=encoding) as client:
        with pytest.raises(sandgym.UnknownEnvError):
            await client.make("no/such-env")
        with pytest.raises(sandgym.InvalidArgumentError) as ei:
            await client.make("test/slow-v0", delay_ms=-5)
        assert "path" in ei.value.details
        with pytest.raises(sandgym.UnknownSessionError):
            await client.request("step", {"session": "never-issued", "action": 0})
        with pytest.raises(sandgym.UnknownTypeError):
            await client.request("frobnicate", {})
        with pytest.raises(sandgym.InvalidMessageError):
            await client.request("hello", {"versions": [PROTOCOL_VERSION], "client": {"name": "x", "version": "1"}})
        env = await client.make("test/counter-v0")
        with pytest.raises(sandgym.ResetNeededError):
            await env.step(0)
        await env.reset()
        with pytest.raises(sandgym.InvalidActionError) as ia:
            await env.step(7)
        assert ia.value.details.get("path") == "" and ia.value.scope == "request"
        assert (await env.step(1))[0] == 1  # the session survived the invalid action
        # The contract lists a bad seed under INVALID_ARGUMENT; the server's schema refuses it first.
        with pytest.raises((sandgym.InvalidArgumentError, sandgym.InvalidMessageError)):
            await client.request("reset", {"session": env.session, "seed": -1})


async def test_env_error_poisons_session(url, encoding):
    async with await AsyncClient.connect(url, encoding=encoding) as client:
        env = await client.make("test/crash-v0")
        await env.reset()
        assert (await env.step(0))[0] == 0
        with pytest.raises(sandgym.EnvError) as ei:
            await env.step(1)
        assert ei.value.scope == "session"
        with pytest.raises(sandgym.ResetNeededError):
            await env.step(0)
        await env.reset()
        assert (await env.step(0))[0] == 0


async def test_sandbox_error(url):
    async with await AsyncClient.connect(url) as client:
        env = await client.make("test/sandbox-fail-v0")
        with pytest.raises(sandgym.SandboxError) as ei:
            await env.reset()
        assert ei.value.retryable is True


async def test_server_timeout(servers):
    srv = servers.get({"step_timeout_ms": 200})
    async with await AsyncClient.connect(srv.url) as client:
        env = await client.make("test/slow-v0", delay_ms=2000)
        await env.reset()
        with pytest.raises(sandgym.ServerTimeoutError) as ei:
            await env.step(0)
        assert ei.value.retryable and ei.value.scope == "session"
        with pytest.raises(sandgym.ResetNeededError):
            await env.step(0)


async def test_capacity_and_opt_in_retry(servers):
    srv = servers.get({"max_sessions_per_connection": 2})
    async with await AsyncClient.connect(srv.url) as client:
        a = await client.make("test/noop-v0")
        await client.make("test/noop-v0")
        with pytest.raises(sandgym.CapacityError) as ei:
            await client.make("test/noop-v0")
        assert ei.value.retryable is True
    async with await AsyncClient.connect(srv.url, retry_capacity=True, capacity_max_attempts=50) as client:
        a = await client.make("test/noop-v0")
        await client.make("test/noop-v0")

        async def free_later() -> None:
            await asyncio.sleep(0.3)
            await a.close()

        t0 = time.perf_counter()
        closer = asyncio.create_task(free_later())
        third = await client.make("test/noop-v0")  # retried until the slot frees
        await closer
        assert third.session and time.perf_counter() - t0 >= 0.25


async def test_capacity_retry_honours_retry_after_ms(url):
    async with await AsyncClient.connect(url, retry_capacity=True, capacity_max_attempts=3) as client:
        err = sandgym.CapacityError("x", details={"retry_after_ms": 120})
        assert 0.12 <= client._capacity_delay(err, 1) <= 0.12 * 1.25 + 1e-9
        plain = sandgym.CapacityError("x")
        assert client._capacity_delay(plain, 1) < client._capacity_delay(plain, 5) + 0.05


async def test_unauthorized(servers):
    srv = servers.get({"tokens": ["s3cret"]})
    with pytest.raises(sandgym.UnauthorizedError) as ei:
        await AsyncClient.connect(srv.url)
    assert ei.value.scope == "connection"
    with pytest.raises(sandgym.UnauthorizedError):
        await AsyncClient.connect(srv.url, token="wrong")
    async with await AsyncClient.connect(srv.url, token="s3cret") as client:
        assert await client.list_envs()


async def test_too_large_closes_connection(servers):
    srv = servers.get({"max_message_bytes": 4096})
    async with await AsyncClient.connect(srv.url) as client:
        assert client.limits["max_message_bytes"] == 4096
        env = await client.make("test/tools-v0")
        await env.reset()
        with pytest.raises(codec.EncodeError):  # refused locally: the server would drop the connection
            await env.step({"name": "echo", "arguments": {"text": "x" * 5000}})
        assert not client.closed
        client._core.max_message_bytes = None  # bypass the local check to see the server's answer
        with pytest.raises(sandgym.ConnectionClosedError) as ei:
            await env.step({"name": "echo", "arguments": {"text": "x" * 5000}})
        assert ei.value.close_code == 1009
        assert client.closed


async def test_handshake_errors_over_raw_socket(url):
    async with ws_connect(url) as ws:
        await ws.send(json.dumps({"id": 1, "type": "list_envs"}))
        reply = json.loads(await ws.recv())
        assert reply["error"]["code"] == "HANDSHAKE_REQUIRED" and reply["id"] == 1
        await ws.send("{not json")
        reply = json.loads(await ws.recv())
        err = sandgym.error_from_wire(reply["error"])
        assert isinstance(err, sandgym.ParseError) and reply["id"] is None
        await ws.send(json.dumps({"id": 2, "type": "hello", "versions": [99], "client": {"name": "x", "version": "0"}}))
        reply = json.loads(await ws.recv())
        err = sandgym.error_from_wire(reply["error"])
        assert isinstance(err, sandgym.UnsupportedVersionError) and err.details["supported"] == [PROTOCOL_VERSION]


@pytest.mark.parametrize("major,path", [(1, "/v1/ws"), (7, None)], ids=["v1 client on /v1/ws", "future client"])
async def test_unsupported_version_via_client(url, monkeypatch, major, path):
    # A client that speaks only `major`: the server refuses its hello naming the majors it speaks. On
    # the v1 endpoint too, so a v1 client gets this typed refusal rather than an HTTP 404.
    from sandgym import _core

    if path is not None:
        url = url.replace(f"/v{PROTOCOL_VERSION}/ws", path)
    orig = _core.hello_params
    monkeypatch.setattr(_core, "hello_params", lambda **kw: {**orig(**kw), "versions": [major]})
    with pytest.raises(sandgym.UnsupportedVersionError) as ei:
        await AsyncClient.connect(url)
    assert ei.value.details["supported"] == [PROTOCOL_VERSION]


# ------------------------------------------------------------------ timeouts, drops, reconnects


async def test_request_timeout_never_desynchronises(url, encoding):
    async with await AsyncClient.connect(url, encoding=encoding) as client:
        slow = await client.make("test/slow-v0", delay_ms=400)
        fast = await client.make("test/counter-v0")
        await slow.reset()
        await fast.reset()
        with pytest.raises(sandgym.RequestTimeoutError) as ei:
            await slow.step(0, timeout=0.05)
        assert isinstance(ei.value, TimeoutError)
        # Replies keep being routed by id while the late reply is still on its way...
        for i in range(1, 4):
            obs, *_ = await fast.step(1)
            assert obs == i
        # ... and after it arrived (dropped, not handed to anyone)
        assert await _eventually(lambda: client.pending == 0 and not client._core._abandoned)
        obs, r, *_ = await slow.step(0)
        assert (obs, r) == (0, 0.0)
        assert (await fast.reset())[0] == 0


async def test_cancelled_call_does_not_desynchronise(url):
    async with await AsyncClient.connect(url) as client:
        slow = await client.make("test/slow-v0", delay_ms=300)
        await slow.reset()
        task = asyncio.create_task(slow.step(0))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert await client.ping() > 0
        assert await _eventually(lambda: client.pending == 0 and not client._core._abandoned)


async def test_dropped_connection_fails_all_pending_at_once(servers, encoding):
    srv = servers.fresh()
    try:
        client = await AsyncClient.connect(srv.url, encoding=encoding)
        envs = await asyncio.gather(*(client.make("test/slow-v0", delay_ms=10000) for _ in range(40)))
        await asyncio.gather(*(e.reset() for e in envs))
        tasks = [asyncio.create_task(e.step(0)) for e in envs]
        await asyncio.sleep(0.2)
        assert client.pending == 40
        t0 = time.perf_counter()
        srv.kill()  # SIGKILL: no close frame, the TCP connection just dies
        results = await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 5)
        assert time.perf_counter() - t0 < 3
        assert all(isinstance(r, sandgym.ConnectionClosedError) for r in results), results
        assert len({id(r) for r in results}) == 1  # one failure, delivered to every caller
        assert client.closed and client.pending == 0
        with pytest.raises(sandgym.ConnectionClosedError):
            await envs[0].step(0)  # sessions do not survive a drop
        await envs[1].close()  # closing a dead session is a no-op
        await client.close()
    finally:
        srv.stop()


async def test_reconnect_after_drop(url):
    client = await AsyncClient.connect(url)
    env = await client.make("test/counter-v0")
    await env.reset()
    client._ws.transport.abort()  # the network drops
    exc = await asyncio.wait_for(client.wait_closed(), 5)
    assert isinstance(exc, sandgym.ConnectionClosedError)
    with pytest.raises(sandgym.ConnectionClosedError):
        await env.step(1)
    # Documented behaviour: a new connect works; the old session is gone (never issued to it).
    async with await AsyncClient.connect(url) as fresh:
        with pytest.raises(sandgym.UnknownSessionError):
            await fresh.request("step", {"session": env.session, "action": 1})
        env2 = await fresh.make("test/counter-v0")
        assert (await env2.reset())[0] == 0


async def test_connect_to_nothing_fails_cleanly():
    with pytest.raises(sandgym.ConnectionClosedError):
        await AsyncClient.connect("ws://127.0.0.1:9/v2/ws", connect_timeout=2)


async def test_server_shutdown_fails_pending(servers):
    srv = servers.fresh()
    events: list = []
    try:
        client = await AsyncClient.connect(srv.url, on_event=events.append)
        env = await client.make("test/slow-v0", delay_ms=8000)
        await env.reset()
        task = asyncio.create_task(env.step(0))
        await asyncio.sleep(0.1)
        srv.proc.terminate()  # SIGTERM: graceful shutdown
        res = await asyncio.wait_for(asyncio.gather(task, return_exceptions=True), 15)
        exc = res[0]
        # The step the shutdown abandons is answered with its id (PROTOCOL.md §2: every readable id gets
        # one reply): SHUTTING_DOWN, retryable, before the connection closes with 1001.
        assert isinstance(exc, sandgym.ShuttingDownError) and exc.retryable, res
        assert client.shutting_down
        assert any(e.event == "shutdown" for e in events)
        assert env.closed
        await asyncio.wait_for(client.wait_closed(), 15)
        await client.close()
    finally:
        srv.stop()


async def test_idle_session_closed_event(servers):
    srv = servers.get({"idle_timeout_ms": 300})
    events: list = []
    async with await AsyncClient.connect(srv.url, on_event=events.append) as client:
        env = await client.make("test/noop-v0")
        await env.reset()
        for _ in range(100):
            if env.closed:
                break
            await asyncio.sleep(0.05)
        assert env.closed and env.closed_reason is not None
        assert any(e.event == "session_closed" and e.session == env.session for e in events)


# ------------------------------------------------------------------ sync client


def test_sync_client_plain(url, encoding):
    with Client(url, encoding=encoding) as client:
        assert "test/counter-v0" in [e["id"] for e in client.list_envs()]
        with client.make("test/counter-v0") as env:
            assert env.reset(seed=0) == (0, {})
            assert env.step(1) == (1, 1.0, False, False, {})
        with pytest.raises(sandgym.UnknownEnvError):
            client.make("nope")
        assert client.ping() > 0
    assert client.closed
    client.close()  # idempotent


async def test_sync_client_inside_running_loop(url):
    # What a Jupyter cell does: blocking calls while an event loop runs in this thread.
    loop = asyncio.get_running_loop()
    assert loop.is_running()
    client = sandgym.connect(url)
    env = client.make("test/counter-v0")
    env.reset()
    assert env.step(1)[0] == 1
    client.close()
    # the caller's loop is untouched and still usable
    await asyncio.sleep(0)


def test_sync_client_shared_by_threads(url):
    with Client(url) as client:
        results: list = []

        def worker() -> None:
            env = client.make("test/counter-v0")
            env.reset()
            results.append([env.step(1)[0] for _ in range(3)])
            env.close()

        threads = [threading.Thread(target=worker) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert results == [[1, 2, 3]] * 8


def test_sync_timeout(url):
    with Client(url, timeout=0.05) as client:
        env = client.make("test/slow-v0", delay_ms=300)
        env.reset(timeout=5)
        with pytest.raises(sandgym.RequestTimeoutError):
            env.step(0)
        assert env.step(0, timeout=5)[0] == 0


# ------------------------------------------------------------------ pools


async def test_async_pool_places_least_loaded(servers):
    a, b = servers.get(None), servers.get({"max_batch": 512})
    async with await AsyncClientPool.connect([a.url, b.url], connections_per_url=2) as pool:
        envs = [await pool.make("test/counter-v0") for _ in range(8)]
        assert pool.load() == [2, 2, 2, 2]
        urls = {e.client.url for e in envs}
        assert urls == {a.url, b.url}
        await envs[0].close()
        await envs[1].close()
        assert sorted(pool.load()) == [1, 1, 2, 2] or sorted(pool.load()) == [0, 2, 2, 2]
        e = await pool.make("test/counter-v0")
        assert (await e.reset())[0] == 0
        # a dropped connection is reconnected by the next make that picks it
        victim = pool._clients[0]
        victim._ws.transport.abort()
        await asyncio.wait_for(victim.wait_closed(), 5)
        envs2 = [await pool.make("test/counter-v0") for _ in range(4)]
        assert all(not x.client.closed for x in envs2)


async def test_async_pool_round_robin(url):
    async with await AsyncClientPool.connect(url, connections_per_url=3, placement="round_robin") as pool:
        envs = [await pool.make("test/noop-v0") for _ in range(6)]
        assert pool.load() == [2, 2, 2]
        assert len({id(e.client) for e in envs}) == 3


def test_sync_pool(url):
    with ClientPool(url, connections_per_url=2) as pool:
        envs = [pool.make("test/counter-v0") for _ in range(4)]
        assert pool.load() == [2, 2]
        assert [e.reset()[0] for e in envs] == [0, 0, 0, 0]
        assert envs[0].step(1)[0] == 1
        assert pool.list_envs()
