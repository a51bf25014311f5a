"""A server that answers ``resume`` (PROTOCOL.md §5a) in a way the protocol does not allow must not
leave the client hanging: the calls that waited for the resume settle with a typed error, within the
grace period. The peer is a deliberately hostile WebSocket server on a real socket (the sandgym server
never answers like this); the first connection is cut without a close frame mid-step, as a network
failure would, so both clients (asyncio and blocking) try to resume on their own."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from websockets.asyncio.server import ServerConnection, serve

import sandgym
from sandgym import AsyncClient, Client

GRACE_MS = 1000

HELLO = {
    "version": 2,
    "server": {"name": "hostile", "version": "0"},
    "capabilities": {"batch": True, "msgpack": True, "pipelining": True, "tool_call": True, "resume": True},
    "limits": {
        "max_message_bytes": 1 << 20,
        "max_sessions": 8,
        "max_batch": 8,
        "step_timeout_ms": 30000,
        "idle_timeout_ms": 0,
        "resume_grace_ms": GRACE_MS,
    },
}

# How the hostile server answers the resume: a frame body for the resume's id (or None: never answers).
ANSWERS: dict[str, dict[str, Any] | None] = {
    # An error the protocol does not give to resume.
    "internal-error": {
        "type": "error",
        "error": {"code": "INTERNAL", "message": "internal error: boom", "retryable": False, "scope": "request"},
    },
    "invalid-message": {
        "type": "error",
        "error": {"code": "INVALID_MESSAGE", "message": "invalid message", "retryable": False, "scope": "request"},
    },
    # Results of the wrong shape.
    "result-not-an-object": {"type": "result", "result": ["not", "an", "object"]},
    "lost-not-ids": {"type": "result", "result": {"resume_token": "r_x", "sessions": [], "unseen": [], "lost": ["x"]}},
    "unseen-not-a-list": {"type": "result", "result": {"resume_token": "r_x", "sessions": [], "unseen": 5, "lost": []}},
    # Never answers the resume at all.
    "silent": None,
}


def hostile(answer: dict[str, Any] | None) -> Callable[[ServerConnection], Any]:
    connections = 0

    async def handler(ws: ServerConnection) -> None:
        nonlocal connections
        connections += 1
        first = connections == 1
        async for raw in ws:
            msg = json.loads(raw)
            rid, typ = msg.get("id"), msg.get("type")
            if typ == "hello":
                await ws.send(
                    json.dumps({"id": rid, "type": "result", "result": {**HELLO, "resume_token": f"r_{connections}"}})
                )
            elif typ == "make":
                await ws.send(
                    json.dumps({"id": rid, "type": "result", "result": {"session": "s_1", "env_spec": {"id": "x"}}})
                )
            elif typ == "reset":
                await ws.send(json.dumps({"id": rid, "type": "result", "result": {"observation": 0, "info": {}}}))
            elif typ == "step" and first:
                ws.transport.abort()  # a cut: no close frame, the client tries to resume
                return
            elif typ == "resume":
                if answer is not None:
                    await ws.send(json.dumps({"id": rid, **answer}))
            else:
                await ws.send(json.dumps({"id": rid, "type": "result", "result": {}}))

    return handler


@pytest.fixture(params=sorted(ANSWERS))
async def hostile_url(request: pytest.FixtureRequest) -> AsyncIterator[str]:
    async with serve(hostile(ANSWERS[request.param]), "127.0.0.1", 0) as server:
        port = server.sockets[0].getsockname()[1]
        yield f"ws://127.0.0.1:{port}/v2/ws"


# Well past the grace period and the connect timeout: a call still waiting then is a hang.
GUARD_S = GRACE_MS / 1000 + 15


async def test_async_client_a_weird_resume_answer_fails_the_step_instead_of_hanging(hostile_url: str) -> None:
    client = await AsyncClient.connect(hostile_url, connect_timeout=2.0)
    try:
        env = await client.make("x")
        await env.reset()
        with pytest.raises(sandgym.SandgymError):
            await asyncio.wait_for(env.step(0), GUARD_S)
        assert client.pending == 0
        assert not client.resuming
    finally:
        await asyncio.wait_for(client.close(), 10)


async def test_blocking_client_a_weird_resume_answer_fails_the_step_instead_of_hanging(hostile_url: str) -> None:
    def run() -> BaseException | None:
        client = Client(hostile_url, connect_timeout=2.0)
        try:
            env = client.make("x")
            env.reset()
            try:
                env.step(0)
            except sandgym.SandgymError as exc:
                assert client.pending == 0
                return exc
            return None
        finally:
            client.close()

    box: list[BaseException | None] = []
    t = threading.Thread(target=lambda: box.append(run()), daemon=True)
    t.start()
    await asyncio.to_thread(t.join, GUARD_S)
    assert not t.is_alive(), "the blocking client's step hung after a weird resume answer"
    assert box and isinstance(box[0], sandgym.SandgymError)
