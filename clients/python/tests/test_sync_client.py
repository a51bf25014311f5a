"""The blocking Client (websockets.sync + leader/follower reads) against the real server CLI."""

from __future__ import annotations

import asyncio
import socket
import threading
import time

import pytest

import sandgym
import sandgym.gym
from sandgym import Client, ClientPool

ENCODINGS = ["json", "msgpack"]


@pytest.fixture(params=ENCODINGS)
def encoding(request) -> str:
    return request.param


def _run_threads(target, n: int, timeout: float = 60.0) -> list[threading.Thread]:
    threads = [threading.Thread(target=target, args=(i,), name=f"worker-{i}") for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
    assert not any(t.is_alive() for t in threads), "worker threads hung"
    return threads


def _no_loop_thread() -> bool:
    return not any("sandgym-loop" in t.name for t in threading.enumerate())


# ------------------------------------------------------------------ sharing between threads


def test_sixteen_threads_share_one_client_with_correct_routing(url, encoding):
    """16 threads x 4 episodes on one connection; every reply carries the thread's own label and its
    session's own position, so a reply routed to the wrong thread fails the test."""
    errors: list[BaseException] = []
    done: list[int] = []
    with Client(url, encoding=encoding) as client:

        def worker(t: int) -> None:
            try:
                for ep in range(4):
                    with client.make("test/dict-v0") as env:
                        obs, _ = env.reset(seed=t)
                        assert obs == {"position": [0, 0], "label": ""}
                        dx = (t + 1) / 32.0
                        for s in range(1, 6):  # max_episode_steps = 5
                            label = f"t{t}e{ep}s{s}"
                            obs, _r, term, trunc, _ = env.step({"move": [dx, -dx], "say": label})
                            assert obs["label"] == label, (obs, label)
                            assert obs["position"] == pytest.approx([dx * s, -dx * s]), (obs, t, s)
                            assert (term, trunc) == (False, s == 5)
                        # mixes in short waits so the reader role changes hands mid-episode
                        assert client.ping() > 0
                done.append(t)
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        _run_threads(worker, 16)
        assert not errors, errors[:3]
        assert sorted(done) == list(range(16))
        assert client.pending == 0 and not client._core._abandoned
        assert client.open_sessions == 0
    assert _no_loop_thread()


def test_threads_with_slow_and_fast_sessions(url):
    """Slow replies (the reader blocks for 150 ms) interleave with fast ones on other threads: the
    reader routes the fast replies to their threads and hands over the role when its own arrives."""
    errors: list[BaseException] = []
    with Client(url) as client:

        def worker(t: int) -> None:
            try:
                if t % 4 == 0:
                    env = client.make("test/slow-v0", delay_ms=150)
                    env.reset()
                    for _ in range(3):
                        assert env.step(0)[:2] == (0, 0.0)
                else:
                    env = client.make("test/counter-v0")
                    for _ in range(5):
                        assert env.reset(seed=t)[0] == 0
                        assert [env.step(1)[0] for _ in range(3)] == [1, 2, 3]
                env.close()
            except BaseException as exc:  # noqa: BLE001
                errors.append(exc)

        _run_threads(worker, 12)
        assert not errors, errors[:3]
        assert client.pending == 0


def test_batch_and_step_many(url, encoding):
    with Client(url, encoding=encoding) as client:
        a = client.make("test/counter-v0")
        b = client.make("test/counter-v0")
        out = client.batch(
            [
                {"type": "reset", "env": a, "seed": 1},
                {"type": "step", "env": a, "action": 1},
                {"type": "step", "session": b, "action": 1},  # never reset
                {"type": "close", "env": b},
            ]
        )
        assert out[0]["observation"] == 0 and out[1]["observation"] == 1
        assert isinstance(out[2], sandgym.ResetNeededError)
        assert out[3] == {}
        assert [m[0] for m in client.step_many([a, a], [1, 1])] == [2, 3]
        assert repr(a).startswith("<Env test/counter-v0")


# ------------------------------------------------------------------ timeouts


def test_sync_timeout_never_desynchronises(url, encoding):
    with Client(url, encoding=encoding) as client:
        slow = client.make("test/slow-v0", delay_ms=400)
        fast = client.make("test/counter-v0")
        slow.reset()
        fast.reset()
        t0 = time.perf_counter()
        with pytest.raises(sandgym.RequestTimeoutError) as ei:
            slow.step(0, timeout=0.05)
        assert time.perf_counter() - t0 < 0.35  # the receive timeout fired, not the reply
        assert isinstance(ei.value, TimeoutError) and ei.value.details["type"] == "step"
        # Later calls get their own replies while the late one is still on its way...
        for i in range(1, 4):
            assert fast.step(1)[0] == i
        # ... and after it arrived: it is dropped by id, not handed to anyone.
        end = time.monotonic() + 5
        while client._core._abandoned and time.monotonic() < end:
            client.poll(0.05)
        assert client.pending == 0 and not client._core._abandoned
        assert slow.step(0)[:2] == (0, 0.0)
        assert fast.reset()[0] == 0


def test_sync_client_default_timeout(url):
    with Client(url, timeout=0.05) as client:
        env = client.make("test/slow-v0", delay_ms=300)
        env.reset(timeout=5)
        with pytest.raises(sandgym.RequestTimeoutError):
            env.step(0)
        assert env.step(0, timeout=5)[0] == 0
        client.timeout = None
        assert env.step(0)[0] == 0


def test_follower_timeout_while_another_thread_reads(url):
    """A thread waiting behind the reader times out on its own deadline; the reader is unaffected."""
    with Client(url) as client:
        slow = client.make("test/slow-v0", delay_ms=600)
        other = client.make("test/slow-v0", delay_ms=600)
        slow.reset()
        other.reset()
        got: list = []
        reader = threading.Thread(target=lambda: got.append(slow.step(0)))
        reader.start()
        time.sleep(0.1)  # the thread is now reading, waiting for its 600 ms reply
        t0 = time.perf_counter()
        with pytest.raises(sandgym.RequestTimeoutError):
            other.step(0, timeout=0.1)
        assert time.perf_counter() - t0 < 0.45
        reader.join(10)
        assert got and got[0][:2] == (0, 0.0)
        assert client.ping() > 0
        end = time.monotonic() + 5
        while client._core._abandoned and time.monotonic() < end:
            client.poll(0.05)
        assert client.pending == 0 and not client._core._abandoned


def test_reader_timeout_hands_over_to_waiting_thread(url):
    """The reader's own deadline expires while another thread still waits: that thread takes over
    reading and still gets its reply; the reader's late reply is dropped."""
    with Client(url) as client:
        slow = client.make("test/slow-v0", delay_ms=500)
        medium = client.make("test/slow-v0", delay_ms=300)
        slow.reset()
        medium.reset()
        got: list = []
        follower = threading.Timer(0.03, lambda: got.append(medium.step(0)))
        follower.start()
        with pytest.raises(sandgym.RequestTimeoutError):
            slow.step(0, timeout=0.1)
        follower.join(10)
        assert got and got[0][:2] == (0, 0.0)
        end = time.monotonic() + 5
        while client._core._abandoned and time.monotonic() < end:
            client.poll(0.05)
        assert client.pending == 0 and not client._core._abandoned
        assert slow.step(0)[:2] == (0, 0.0)


# ------------------------------------------------------------------ dropped connections


def test_sync_drop_fails_all_pending_waiters_at_once(servers, encoding):
    srv = servers.fresh()
    try:
        client = Client(srv.url, encoding=encoding)
        envs = [client.make("test/slow-v0", delay_ms=10000) for _ in range(16)]
        for e in envs:
            e.reset()
        results: dict[int, BaseException | tuple] = {}
        when: dict[int, float] = {}

        def worker(i: int) -> None:
            try:
                results[i] = envs[i].step(0)
            except BaseException as exc:  # noqa: BLE001
                results[i] = exc
            when[i] = time.perf_counter()

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(16)]
        for t in threads:
            t.start()
        end = time.monotonic() + 10
        while client.pending < 16 and time.monotonic() < end:
            time.sleep(0.01)
        assert client.pending == 16
        time.sleep(0.1)  # every thread is waiting: one reads, fifteen follow
        t0 = time.perf_counter()
        srv.kill()  # SIGKILL: no close frame, the TCP connection just dies
        for t in threads:
            t.join(10)
        assert not any(t.is_alive() for t in threads)
        assert all(isinstance(r, sandgym.ConnectionClosedError) for r in results.values()), results
        assert len({id(r) for r in results.values()}) == 1  # one failure, delivered to every caller
        assert max(when.values()) - t0 < 3
        assert max(when.values()) - min(when.values()) < 0.5  # all at once, not one by one
        assert client.closed and client.pending == 0
        with pytest.raises(sandgym.ConnectionClosedError):
            envs[0].step(0)  # sessions do not survive a drop
        assert all(e.closed for e in envs)
        envs[1].close()  # closing a dead session is a no-op
        client.close()
    finally:
        srv.stop()


def test_sync_drop_noticed_while_idle_and_reconnect(url):
    client = Client(url)
    env = client.make("test/counter-v0")
    env.reset()
    client._ws.socket.shutdown(socket.SHUT_RDWR)  # the network drops while nobody waits
    exc = client.wait_closed(5)
    assert isinstance(exc, sandgym.ConnectionClosedError)
    assert client.closed and env.closed
    with pytest.raises(sandgym.ConnectionClosedError):
        env.step(1)
    client.close()
    # A new connection works right away; the old session is gone.
    with Client(url) as fresh:
        with pytest.raises(sandgym.UnknownSessionError):
            fresh.request("step", {"session": env.session, "action": 1})
        assert fresh.make("test/counter-v0").reset()[0] == 0


def test_sync_server_shutdown_fails_pending_with_cause(servers):
    srv = servers.fresh()
    events: list = []
    try:
        client = Client(srv.url, on_event=events.append)
        env = client.make("test/slow-v0", delay_ms=8000)
        env.reset()
        threading.Timer(0.2, srv.proc.terminate).start()  # SIGTERM: graceful shutdown
        # The step the shutdown abandons is answered with its id (PROTOCOL.md §2: every readable id gets
        # one reply): SHUTTING_DOWN, retryable, before the connection closes with 1001.
        with pytest.raises(sandgym.ShuttingDownError) as ei:
            env.step(0)
        assert ei.value.retryable
        # then the connection closes (1001) with the shutdown as its cause
        closed = client.wait_closed(timeout=15)
        assert closed is not None and closed.close_code == 1001
        assert isinstance(closed.cause_error, sandgym.ShuttingDownError)
        assert client.shutting_down and any(e.event == "shutdown" for e in events)
        assert env.closed and client.closed
        client.close()
    finally:
        srv.stop()


def test_sync_too_large_closes_connection(servers):
    srv = servers.get({"max_message_bytes": 4096})
    with Client(srv.url) as client:
        env = client.make("test/tools-v0")
        env.reset()
        with pytest.raises(sandgym.codec.EncodeError):
            env.step({"name": "echo", "arguments": {"text": "x" * 5000}})
        assert not client.closed
        client._core.max_message_bytes = None  # bypass the local check to see the server's answer
        with pytest.raises(sandgym.ConnectionClosedError) as ei:
            env.step({"name": "echo", "arguments": {"text": "x" * 5000}})
        assert ei.value.close_code == 1009
        assert isinstance(ei.value.cause_error, sandgym.TooLargeError)
        assert client.closed


def test_sync_connect_errors(servers):
    with pytest.raises(sandgym.ConnectionClosedError):
        Client("ws://127.0.0.1:9/v2/ws", connect_timeout=2)
    srv = servers.get({"tokens": ["s3cret"]})
    with pytest.raises(sandgym.UnauthorizedError):
        Client(srv.url)
    with pytest.raises(sandgym.UnauthorizedError):
        Client(srv.url, token="wrong")
    with Client(srv.url, token="s3cret") as client:
        assert client.list_envs()


# ------------------------------------------------------------------ capacity, events


def test_sync_capacity_opt_in_retry(servers):
    srv = servers.get({"max_sessions_per_connection": 2})
    with Client(srv.url) as client:
        client.make("test/noop-v0")
        client.make("test/noop-v0")
        with pytest.raises(sandgym.CapacityError):
            client.make("test/noop-v0")
    with Client(srv.url, retry_capacity=True, capacity_max_attempts=50) as client:
        a = client.make("test/noop-v0")
        client.make("test/noop-v0")
        t0 = time.perf_counter()
        closer = threading.Timer(0.3, a.close)  # another thread frees a slot
        closer.start()
        third = client.make("test/noop-v0")  # retried until the slot frees
        closer.join()
        assert third.session and time.perf_counter() - t0 >= 0.25


def test_sync_events_while_idle(servers):
    srv = servers.get({"idle_timeout_ms": 300})
    events: list = []
    with Client(srv.url, on_event=events.append) as client:
        env = client.make("test/noop-v0")
        env.reset()
        end = time.monotonic() + 10
        while not env.closed and time.monotonic() < end:
            client.poll(0.1)  # nobody waits for a reply: poll reads the session_closed event
        assert env.closed and env.closed_reason is not None
        assert any(e.event == "session_closed" and e.session == env.session for e in events)
        assert client.open_sessions == 0


def test_on_event_handler_cannot_reenter(servers):
    srv = servers.get({"idle_timeout_ms": 300})
    seen: list = []
    client: Client | None = None

    def handler(ev) -> None:
        assert client is not None
        try:
            client.ping()
        except RuntimeError as exc:
            seen.append(exc)

    client = Client(srv.url, on_event=handler)
    try:
        env = client.make("test/noop-v0")
        env.reset()
        end = time.monotonic() + 10
        while not seen and time.monotonic() < end:
            client.poll(0.1)
        assert seen and "on_event" in str(seen[0])
        assert client.ping() > 0  # the client is still usable afterwards
    finally:
        client.close()


# ------------------------------------------------------------------ inside a running event loop


async def test_sync_client_in_running_loop_with_other_tasks(url):
    """A Jupyter cell: blocking calls from the loop's thread, while an executor thread shares the same
    client; the loop is not used by the client and keeps working."""
    loop = asyncio.get_running_loop()
    ticks: list[int] = []

    async def ticker() -> None:
        while True:
            ticks.append(1)
            await asyncio.sleep(0.001)

    tick_task = asyncio.create_task(ticker())
    await asyncio.sleep(0.01)
    with sandgym.connect(url) as client:

        def episode(seed: int) -> list:
            env = client.make("test/counter-v0")
            env.reset(seed=seed)
            out = [env.step(1)[0] for _ in range(3)]
            env.close()
            return out

        fut = loop.run_in_executor(None, lambda: [episode(s) for s in range(10)])
        mine = [episode(s) for s in range(10)]  # blocking, in the loop's own thread
        assert mine == [[1, 2, 3]] * 10
        assert await fut == [[1, 2, 3]] * 10
        with sandgym.gym.make(client, "test/counter-v0") as genv:
            genv.reset(seed=0)
            assert genv.step(1)[0] == 1
    assert asyncio.get_running_loop() is loop and loop.is_running()
    n = len(ticks)
    await asyncio.sleep(0.05)
    assert len(ticks) > n  # the caller's loop still runs its tasks
    tick_task.cancel()
    assert _no_loop_thread()


# ------------------------------------------------------------------ pool


def test_sync_pool_threads_and_reconnect(url):
    with ClientPool(url, connections_per_url=2) as pool:
        envs = [pool.make("test/counter-v0") for _ in range(4)]
        assert pool.load() == [2, 2]
        assert len({id(e.client) for e in envs}) == 2
        errors: list[BaseException] = []

        def worker(i: int) -> None:
            try:
                env = envs[i]
                assert env.reset()[0] == 0
                assert [env.step(1)[0] for _ in range(3)] == [1, 2, 3]
            except BaseException as exc:  # noqa: BLE001
                errors.append(exc)

        _run_threads(worker, 4)
        assert not errors, errors
        victim = pool._clients[0]
        assert victim is not None
        victim._ws.socket.shutdown(socket.SHUT_RDWR)
        assert victim.wait_closed(5) is not None
        assert pool.load()[0] == 0
        fresh = [pool.make("test/counter-v0") for _ in range(3)]
        assert all(not e.client.closed for e in fresh)
        assert pool._clients[0] is not victim
        assert fresh[0].reset()[0] == 0
