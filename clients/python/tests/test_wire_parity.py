"""Both layers put the same frames on the wire for every operation, and read the same values back.

A recording relay (a real WebSocket server in a thread) sits between the client and the real sandgym
server: it forwards every frame both ways and keeps what the client sent. The same script runs once
on AsyncClient and once on Client; after the values that differ by nature (server-assigned session
ids, ping's timestamp) are replaced, the recorded frames must be identical byte for byte.
"""

from __future__ import annotations

import asyncio
import re
import threading
from typing import Any

import msgpack
import pytest
import websockets
from websockets.sync.client import connect as sync_connect
from websockets.sync.server import ServerConnection, serve

import sandgym


class Relay:
    """Forwards WebSocket frames to ``upstream`` and records the ones clients send, per connection."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        self.sent: list[list[str | bytes]] = []
        self._server = serve(self._handle, "127.0.0.1", 0, compression=None, max_size=None)
        self.url = f"ws://127.0.0.1:{self._server.socket.getsockname()[1]}/v2/ws"  # any path: the relay does not route
        self._thread = threading.Thread(target=self._server.serve_forever, name="relay", daemon=True)
        self._thread.start()

    def _handle(self, client: ServerConnection) -> None:
        frames: list[str | bytes] = []
        self.sent.append(frames)
        with sync_connect(self.upstream, compression=None, max_size=None) as server:

            def downstream() -> None:
                try:
                    for data in server:
                        client.send(data)
                except websockets.exceptions.ConnectionClosed:
                    pass
                finally:
                    client.close()

            pump = threading.Thread(target=downstream, name="relay-down", daemon=True)
            pump.start()
            try:
                for data in client:
                    frames.append(data)
                    server.send(data)
            except websockets.exceptions.ConnectionClosed:
                pass
            server.close()
            pump.join(10)

    def close(self) -> None:
        self._server.shutdown()
        self._thread.join(10)


@pytest.fixture(scope="module")
def relay(url):
    r = Relay(url)
    yield r
    r.close()


async def run_async(url: str, encoding: str) -> list[Any]:
    out: list[Any] = []
    async with await sandgym.AsyncClient.connect(url, encoding=encoding) as client:
        out.append(len(await client.list_envs()) > 0)
        out.append(len(await client.request("list_envs")) > 0)
        a = await client.make("test/counter-v0")
        b = await client.make("test/slow-v0", delay_ms=1)
        out.append((a.env_id, b.env_id, a.action_space))
        try:  # an option the env does not know is refused, the same way by both clients
            await a.reset(seed=3, options={"k": 1})
        except sandgym.SandgymError as exc:
            out.append((type(exc).__name__, exc.code, exc.details))
        out.append(await a.reset(seed=3, options={}))
        out.append(await b.reset())
        out.append(await a.step(1))
        try:
            await a.step(5)
        except sandgym.SandgymError as exc:
            out.append((type(exc).__name__, exc.details))
        out.append(
            await client.batch(
                [
                    {"type": "step", "env": a, "action": 1},
                    {"type": "reset", "session": b},
                    {"type": "step", "session": "no-such-session", "action": 0},
                ]
            )
        )
        out.append(await client.step_many([a, b], [1, 0]))
        out.append(await client.ping() >= 0)
        await a.close()
        await a.close()  # idempotent: no second frame
        await b.close()
    return out


def run_sync(url: str, encoding: str) -> list[Any]:
    out: list[Any] = []
    with sandgym.Client(url, encoding=encoding) as client:
        out.append(len(client.list_envs()) > 0)
        out.append(len(client.request("list_envs")) > 0)
        a = client.make("test/counter-v0")
        b = client.make("test/slow-v0", delay_ms=1)
        out.append((a.env_id, b.env_id, a.action_space))
        try:  # an option the env does not know is refused, the same way by both clients
            a.reset(seed=3, options={"k": 1})
        except sandgym.SandgymError as exc:
            out.append((type(exc).__name__, exc.code, exc.details))
        out.append(a.reset(seed=3, options={}))
        out.append(b.reset())
        out.append(a.step(1))
        try:
            a.step(5)
        except sandgym.SandgymError as exc:
            out.append((type(exc).__name__, exc.details))
        out.append(
            client.batch(
                [
                    {"type": "step", "env": a, "action": 1},
                    {"type": "reset", "session": b},
                    {"type": "step", "session": "no-such-session", "action": 0},
                ]
            )
        )
        out.append(client.step_many([a, b], [1, 0]))
        out.append(client.ping() >= 0)
        a.close()
        a.close()
        b.close()
    return out


def comparable(value: Any) -> Any:
    """Results with error instances replaced by (class, code, details) so that lists compare."""
    if isinstance(value, sandgym.SandgymError):
        return (type(value).__name__, value.code, value.details)
    if isinstance(value, (list, tuple)):
        return type(value)(comparable(v) for v in value)
    return value


def normalise(frames: list[str | bytes], encoding: str) -> list[str | bytes]:
    """Replace what differs between two runs by nature: the session ids the server handed out (in
    order of first use) and ping's timestamp. Everything else must match to the byte."""
    sessions: dict[str, str] = {}
    out: list[str | bytes] = []
    for frame in frames:
        data = frame
        msg = sandgym.codec.decode(data)
        for sid in _session_ids(msg):
            sessions.setdefault(sid, f"session-{len(sessions):02d}")
        if encoding == "json":
            assert isinstance(data, str)
            for sid, alias in sessions.items():
                data = data.replace(f'"{sid}"', f'"{alias}"')
            data = re.sub(r'"t":[0-9.e+-]+', '"t":0', data) if msg["type"] == "ping" else data
        else:
            assert isinstance(data, bytes)
            for sid, alias in sessions.items():
                data = data.replace(msgpack.packb(sid), msgpack.packb(alias))
            if msg["type"] == "ping":
                t = msgpack.packb("t") + msgpack.packb(msg["t"])
                assert data.count(t) == 1
                data = data.replace(t, msgpack.packb("t") + msgpack.packb(0.0))
        out.append(data)
    return out


def _session_ids(msg: Any) -> list[str]:
    found = [msg["session"]] if isinstance(msg.get("session"), str) else []
    for item in msg.get("requests", []):
        found += _session_ids(item)
    return [s for s in found if s != "no-such-session"]


@pytest.mark.parametrize("encoding", ["json", "msgpack"])
def test_async_and_sync_clients_send_identical_frames(relay, encoding):
    n = len(relay.sent)
    async_out = asyncio.run(run_async(relay.url, encoding))
    sync_out = run_sync(relay.url, encoding)
    assert len(relay.sent) == n + 2
    async_frames, sync_frames = relay.sent[n], relay.sent[n + 1]

    types = [sandgym.codec.decode(f)["type"] for f in async_frames]
    # every operation of both APIs went over the wire (close only once per session)
    assert types == [
        "hello",
        "list_envs",
        "list_envs",
        "make",
        "make",
        "reset",
        "reset",
        "reset",
        "step",
        "step",
        "batch",
        "batch",
        "ping",
        "close",
        "close",
    ]
    assert normalise(async_frames, encoding) == normalise(sync_frames, encoding)
    assert comparable(async_out) == comparable(sync_out)
    assert async_out[3] == (
        "InvalidArgumentError",
        "INVALID_ARGUMENT",
        {"path": "/k", "reason": async_out[3][2]["reason"]},
    )
    # the replies were read alike too, and they are what the fixtures return
    assert async_out[4] == (0, {}) and async_out[6] == (1, 1.0, False, False, {})
    assert async_out[7][0] == "InvalidActionError"
    batch = async_out[8]
    assert batch[0]["observation"] == 2 and isinstance(batch[2], sandgym.UnknownSessionError)
    assert async_out[9][0] == (3, 1.0, True, False, {})
