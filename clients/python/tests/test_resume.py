"""The asyncio client's automatic session resume (PROTOCOL.md §5a) against the real server CLI
through a TCP proxy the test cuts: the client reconnects on its own, resumes, and the pending calls
settle with the replies the server held (once each); calls made meanwhile go out after the resume;
a request the server never received is sent again and runs once; when the grace period passes it
fails the pending calls and the handles with ResumeExpiredError and logs it. Nothing waits on a
sleep standing in for the server: each step is awaited through the protocol itself."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from urllib.parse import urlsplit, urlunsplit

import pytest

from _server import ServerFactory
from sandgym import AsyncClient, Client, ConnectionClosedError, ResumeExpiredError


class Proxy:
    """TCP proxy: ``cut()`` aborts every connection (no close frame reaches either side); while
    ``blocked`` new connections are aborted on arrival (the server looks unreachable)."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.blocked = False
        self.accepted = 0
        self._transports: set[asyncio.BaseTransport] = set()
        self._server: asyncio.base_events.Server | None = None
        self.port = 0

    async def start(self) -> Proxy:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.blocked:
            writer.transport.abort()
            return
        self.accepted += 1
        try:
            up_r, up_w = await asyncio.open_connection("127.0.0.1", self.target_port)
        except OSError:
            writer.transport.abort()
            return
        self._transports.update((writer.transport, up_w.transport))

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            try:
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            except (ConnectionError, OSError):
                pass
            finally:
                dst.transport.abort()

        await asyncio.gather(pipe(reader, up_w), pipe(up_r, writer))

    def url(self, server_url: str) -> str:
        parts = urlsplit(server_url)
        return urlunsplit(parts._replace(netloc=f"127.0.0.1:{self.port}"))

    def cut(self) -> None:
        for t in list(self._transports):
            t.abort()
        self._transports.clear()

    async def close(self) -> None:
        self.cut()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()


@pytest.fixture
async def resumable(servers: ServerFactory) -> AsyncIterator[tuple[str, Proxy]]:
    srv = servers.get({"resume_grace_ms": 60000})
    proxy = await Proxy(int(urlsplit(srv.url).port or 0)).start()
    yield proxy.url(srv.url), proxy
    await proxy.close()


async def until(pred: object, timeout: float = 10.0) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not pred():  # type: ignore[operator]
        if loop.time() > end:
            raise AssertionError("condition not reached")
        await asyncio.sleep(0.01)


async def test_cut_mid_step_resumes_and_the_episode_goes_on(
    resumable: tuple[str, Proxy], caplog: pytest.LogCaptureFixture
) -> None:
    url, proxy = resumable
    caplog.set_level(logging.INFO, logger="sandgym")
    client = await AsyncClient.connect(url)
    try:
        slow = await client.make("test/slow-v0", delay_ms=1500)
        counter = await client.make("test/counter-v0")
        await slow.reset()
        await counter.reset()
        assert (await counter.step(1))[0] == 1
        running = asyncio.create_task(slow.step(0))
        await client.ping()  # the step was received before the ping was answered
        proxy.cut()
        await until(lambda: client.resuming or proxy.accepted > 1)
        meanwhile = asyncio.create_task(counter.step(1))  # made while reconnecting: follows the resume
        obs, reward, terminated, truncated, _info = await running
        assert (obs, reward, terminated, truncated) == (0, 0.0, False, False)
        assert (await meanwhile)[0] == 2
        assert (await counter.step(1))[0] == 3
        assert not client.closed
        assert any("reconnecting to resume 2 session(s)" in r.getMessage() for r in caplog.records)
        assert any("resumed 2 session(s)" in r.getMessage() for r in caplog.records)
    finally:
        await client.close()


async def test_a_request_lost_with_the_socket_is_sent_again_and_runs_once(resumable: tuple[str, Proxy]) -> None:
    url, proxy = resumable
    client = await AsyncClient.connect(url)
    try:
        counter = await client.make("test/counter-v0")
        await counter.reset()
        proxy.blocked = True
        proxy.cut()
        step = asyncio.create_task(counter.step(1))
        await until(lambda: client.resuming)
        proxy.blocked = False
        assert (await step)[0] == 1
        assert (await counter.step(1))[0] == 2  # exactly once: not 3
    finally:
        await client.close()


async def test_unreachable_for_the_grace_period_fails_pending_calls_and_handles(
    servers: ServerFactory, caplog: pytest.LogCaptureFixture
) -> None:
    srv = servers.get({"resume_grace_ms": 400})
    proxy = await Proxy(int(urlsplit(srv.url).port or 0)).start()
    caplog.set_level(logging.INFO, logger="sandgym")
    client = await AsyncClient.connect(proxy.url(srv.url))
    try:
        env = await client.make("test/counter-v0")
        await env.reset()
        proxy.blocked = True
        proxy.cut()
        with pytest.raises(ResumeExpiredError) as info:
            await env.step(1)
        assert "grace period of 0.4 s" in str(info.value)
        assert info.value.details is not None and info.value.details["sessions"] == [env.session]
        exc = await client.wait_closed()
        assert isinstance(exc.cause_error, ResumeExpiredError)
        assert env.closed
        with pytest.raises(ResumeExpiredError):
            await env.step(1)
        assert any("session(s) lost" in r.getMessage() and r.levelno == logging.WARNING for r in caplog.records)
    finally:
        await client.close()
        await proxy.close()


async def test_reconnect_false_fails_at_once(resumable: tuple[str, Proxy]) -> None:
    url, proxy = resumable
    client = await AsyncClient.connect(url, reconnect=False)
    try:
        env = await client.make("test/slow-v0", delay_ms=5000)
        await env.reset()
        pending = asyncio.create_task(env.step(0))
        await client.ping()
        proxy.cut()
        with pytest.raises(ConnectionClosedError):
            await pending
        assert client.closed
    finally:
        await client.close()


# ------------------------------------------------------------------------------ blocking Client
# The proxy runs on this test's event loop; the blocking client runs in worker threads.


async def test_sync_client_resumes_a_cut_mid_step(
    resumable: tuple[str, Proxy], caplog: pytest.LogCaptureFixture
) -> None:
    url, proxy = resumable
    caplog.set_level(logging.INFO, logger="sandgym")
    client = await asyncio.to_thread(Client, url)
    try:
        slow = await asyncio.to_thread(client.make, "test/slow-v0", delay_ms=1500)
        counter = await asyncio.to_thread(client.make, "test/counter-v0")
        await asyncio.to_thread(slow.reset)
        await asyncio.to_thread(counter.reset)
        assert (await asyncio.to_thread(counter.step, 1))[0] == 1
        running = asyncio.ensure_future(asyncio.to_thread(slow.step, 0))
        await asyncio.to_thread(client.ping)  # the step was received before the ping was answered
        proxy.cut()
        obs, reward, terminated, truncated, _info = await running
        assert (obs, reward, terminated, truncated) == (0, 0.0, False, False)
        assert (await asyncio.to_thread(counter.step, 1))[0] == 2
        assert any("resumed 2 session(s)" in r.getMessage() for r in caplog.records)
    finally:
        await asyncio.to_thread(client.close)


async def test_sync_client_resends_a_request_lost_with_the_socket_once(resumable: tuple[str, Proxy]) -> None:
    url, proxy = resumable
    client = await asyncio.to_thread(Client, url)
    try:
        counter = await asyncio.to_thread(client.make, "test/counter-v0")
        await asyncio.to_thread(counter.reset)
        proxy.cut()
        assert (await asyncio.to_thread(counter.step, 1))[0] == 1
        assert (await asyncio.to_thread(counter.step, 1))[0] == 2  # exactly once: not 3
    finally:
        await asyncio.to_thread(client.close)


async def test_sync_client_unreachable_for_the_grace_period(servers: ServerFactory) -> None:
    srv = servers.get({"resume_grace_ms": 400})
    proxy = await Proxy(int(urlsplit(srv.url).port or 0)).start()
    client = await asyncio.to_thread(Client, proxy.url(srv.url))
    try:
        env = await asyncio.to_thread(client.make, "test/counter-v0")
        await asyncio.to_thread(env.reset)
        proxy.blocked = True
        proxy.cut()
        with pytest.raises(ResumeExpiredError):
            await asyncio.to_thread(env.step, 1)
        assert client.closed
        with pytest.raises(ResumeExpiredError):
            await asyncio.to_thread(env.step, 1)
    finally:
        await asyncio.to_thread(client.close)
        await proxy.close()
