"""A server that answers a call with ``id: null`` (breaking PROTOCOL.md §2) must not leave it waiting:
the client fails the pending calls with the server's error. The peer here is a deliberately broken
WebSocket server on a real socket; the sandgym server never does this for a frame the client encoded."""

from __future__ import annotations

import asyncio
import json

import pytest
from websockets.asyncio.server import serve

import sandgym
from sandgym import AsyncClient


async def _broken_server(ws) -> None:  # type: ignore[no-untyped-def]
    async for raw in ws:
        msg = json.loads(raw)
        if msg["type"] == "hello":
            await ws.send(
                json.dumps(
                    {
                        "id": msg["id"],
                        "type": "result",
                        "result": {
                            "version": 2,
                            "server": {"name": "broken", "version": "0"},
                            "capabilities": {"batch": True, "msgpack": True, "pipelining": True, "tool_call": True},
                            "limits": {
                                "max_message_bytes": 1 << 20,
                                "max_sessions": 8,
                                "max_batch": 8,
                                "step_timeout_ms": 1000,
                                "idle_timeout_ms": 0,
                            },
                        },
                    }
                )
            )
        else:
            await ws.send(
                json.dumps(
                    {
                        "id": None,
                        "type": "error",
                        "error": {
                            "code": "PARSE_ERROR",
                            "message": 'frame could not be decoded: object key "__proto__" is not allowed',
                            "retryable": False,
                            "scope": "request",
                        },
                    }
                )
            )


async def test_an_id_null_error_fails_the_pending_call_instead_of_hanging() -> None:
    async with serve(_broken_server, "127.0.0.1", 0) as server:
        port = server.sockets[0].getsockname()[1]
        client = await AsyncClient.connect(f"ws://127.0.0.1:{port}/v2/ws")
        try:
            with pytest.raises(sandgym.ParseError):
                # Before: the call waited forever (here: the 10 s guard below would fire instead).
                await asyncio.wait_for(client.request("ping", {"t": 1}, timeout=None), 10)
            assert client.pending == 0
        finally:
            await client.close()
