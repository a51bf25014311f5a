"""Shared vectors over a live socket: transcripts (both encodings) and the request schema vectors.

Raw WebSocket frames are used (encoded with sandgym.codec) so that the vectors drive the server
exactly as written; replies are decoded strictly (a server frame the protocol refuses fails the test).
One server per distinct transcript ``server`` config, shared by the transcripts that use it.
"""

from __future__ import annotations

import asyncio
import copy
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest
import websockets
from websockets.asyncio.client import ClientConnection, connect as ws_connect

from conftest import load_vectors
from sandgym import codec
from sandgym._core import PROTOCOL_VERSION

TRANSCRIPTS = load_vectors("transcripts")
SCHEMA_FILES = load_vectors("schema")
RECV_TIMEOUT = 15.0
HELLO = {
    "id": 0,
    "type": "hello",
    "versions": [PROTOCOL_VERSION],
    "client": {"name": "sandgym-python-vectors", "version": "1"},
}


class Raw:
    """One raw protocol connection in one encoding."""

    def __init__(self, ws: ClientConnection, encoding: str) -> None:
        self.ws = ws
        self.encoding = encoding

    @classmethod
    async def open(cls, url: str, encoding: str) -> Raw:
        return cls(await ws_connect(url, max_size=None, compression=None), encoding)

    async def send(self, frame: Any) -> None:
        # Vectors may hold deliberately invalid frames: encode without the client's own refusals.
        if self.encoding == "json":
            import json

            await self.ws.send(json.dumps(frame, separators=(",", ":"), ensure_ascii=False))
        else:
            import msgpack

            await self.ws.send(msgpack.packb(frame, use_bin_type=True))

    async def recv(self) -> Any:
        data = await asyncio.wait_for(self.ws.recv(), RECV_TIMEOUT)
        if self.encoding == "msgpack" and isinstance(data, str):
            pytest.fail(f"text frame in a msgpack run: {data[:200]}")
        return codec.decode(data, strict=True)

    async def close(self) -> None:
        await self.ws.close()


# ------------------------------------------------------------------------------ matcher


class Mismatch(AssertionError):
    pass


def match(expect: Any, actual: Any, caps: dict[str, Any], path: str = "") -> None:
    if isinstance(expect, dict):
        if "$capture" in expect and len(expect) == 1:
            caps[expect["$capture"]] = actual
            return
        if "$any" in expect and len(expect) == 1:
            return
        if "$type" in expect and len(expect) == 1:
            if not _type_ok(expect["$type"], actual):
                raise Mismatch(f"{path or '/'}: expected {expect['$type']}, got {actual!r}")
            return
        if not isinstance(actual, dict):
            raise Mismatch(f"{path or '/'}: expected an object, got {actual!r}")
        for k, v in expect.items():
            if isinstance(v, dict) and v.get("$absent") is True and len(v) == 1:
                if k in actual:
                    raise Mismatch(f"{path}/{k}: must be absent, got {actual[k]!r}")
                continue
            if k not in actual:
                raise Mismatch(f"{path}/{k}: missing in {actual!r}")
            match(v, actual[k], caps, f"{path}/{k}")
        return
    if isinstance(expect, list):
        if not isinstance(actual, list) or len(actual) != len(expect):
            raise Mismatch(f"{path or '/'}: expected {expect!r}, got {actual!r}")
        for i, (e, a) in enumerate(zip(expect, actual, strict=True)):
            match(e, a, caps, f"{path}/{i}")
        return
    if isinstance(expect, bool) or isinstance(actual, bool):
        ok = type(expect) is type(actual) and expect == actual
    elif isinstance(expect, (int, float)) and isinstance(actual, (int, float)):
        ok = expect == actual
    else:
        ok = type(expect) is type(actual) and expect == actual
    if not ok:
        raise Mismatch(f"{path or '/'}: expected {expect!r}, got {actual!r}")


def _type_ok(t: str, v: Any) -> bool:
    if t == "number":
        return isinstance(v, (int, float)) and not isinstance(v, bool)
    if t == "integer":
        return (isinstance(v, int) and not isinstance(v, bool)) or (isinstance(v, float) and v.is_integer())
    return {
        "string": isinstance(v, str),
        "boolean": isinstance(v, bool),
        "object": isinstance(v, dict),
        "array": isinstance(v, list),
        "null": v is None,
    }[t]


def substitute(frame: Any, caps: dict[str, Any]) -> Any:
    if isinstance(frame, dict):
        if set(frame) == {"$var"}:
            return caps[frame["$var"]]
        return {k: substitute(v, caps) for k, v in frame.items()}
    if isinstance(frame, list):
        return [substitute(v, caps) for v in frame]
    return frame


def test_matcher_rules():
    caps: dict[str, Any] = {}
    match({"a": 1, "b": {"$capture": "x"}, "c": {"$absent": True}}, {"a": 1.0, "b": [1], "d": 0}, caps)
    assert caps == {"x": [1]}
    with pytest.raises(Mismatch):
        match({"c": {"$absent": True}}, {"c": None}, caps)
    with pytest.raises(Mismatch):
        match([1, 2], [1], caps)
    with pytest.raises(Mismatch):
        match(True, 1, caps)
    match({"$type": "integer"}, 3, caps)
    with pytest.raises(Mismatch):
        match({"$type": "integer"}, 3.5, caps)
    assert substitute({"s": {"$var": "x"}}, caps) == {"s": [1]}


# ------------------------------------------------------------------------------ transcripts


def _transcript_params():
    for name, t in TRANSCRIPTS:
        for enc in t.get("encodings", ["json", "msgpack"]):
            yield pytest.param(t, enc, id=f"{name}[{enc}]")


def test_transcripts_exist():
    assert len(TRANSCRIPTS) >= 10


# Keys this runner understands: a format that moved on without it fails here instead of being skipped.
TOP_KEYS = {"name", "description", "server", "path", "encodings", "steps", "note"}
STEP_KEYS = {"send", "send_raw", "send_raw_hex", "invalid", "expect", "expect_any_order", "expect_close", "note"}


@pytest.mark.parametrize("name,transcript", TRANSCRIPTS, ids=[n for n, _ in TRANSCRIPTS])
def test_transcript_keys_known(name, transcript):
    assert set(transcript) <= TOP_KEYS, set(transcript) - TOP_KEYS
    for i, step in enumerate(transcript["steps"]):
        assert set(step) <= STEP_KEYS, (i, set(step) - STEP_KEYS)


async def _expect_close(raw: Raw, code: int) -> None:
    try:
        while True:
            frame = await raw.recv()
            # connection-scoped error frames may precede the close
            assert frame.get("type") == "error" and frame["error"]["scope"] == "connection", frame
    except websockets.exceptions.ConnectionClosed:
        pass
    proto = raw.ws.protocol
    rcvd = proto.close_rcvd
    assert rcvd is not None, "the server dropped the connection without a close frame"
    assert rcvd.code == code, f"close code {rcvd.code} != {code}"


@pytest.mark.parametrize("transcript,encoding", list(_transcript_params()))
async def test_transcript(servers, transcript, encoding):
    srv = servers.get(transcript.get("server") or None)
    url = srv.url
    if "path" in transcript:  # another major's endpoint (e.g. /v1/ws) on the same server
        url = urlunsplit(urlsplit(url)._replace(path=transcript["path"]))
    raw = await Raw.open(url, encoding)
    caps: dict[str, Any] = {}
    try:
        for i, step in enumerate(transcript["steps"]):
            where = f"{transcript['name']} step {i}"
            if "send_raw" in step:
                if encoding != "json":
                    continue
                await raw.ws.send(step["send_raw"])
            elif "send_raw_hex" in step:
                if encoding != "msgpack":
                    continue
                await raw.ws.send(bytes.fromhex(step["send_raw_hex"]))
            elif "send" in step:
                # an array is several pipelined frames only with expect_any_order; else one frame
                multi = isinstance(step["send"], list) and "expect_any_order" in step
                frames = step["send"] if multi else [step["send"]]
                for f in frames:
                    await raw.send(substitute(copy.deepcopy(f), caps))
            if "expect" in step:
                frame = await raw.recv()
                try:
                    match(step["expect"], frame, caps)
                except Mismatch as exc:
                    raise AssertionError(f"{where}: {exc}\nframe: {frame}") from None
            if "expect_any_order" in step:
                expected = list(step["expect_any_order"])
                got = [await raw.recv() for _ in expected]
                for frame in got:
                    for j, e in enumerate(expected):
                        trial = dict(caps)
                        try:
                            match(e, frame, trial)
                        except Mismatch:
                            continue
                        caps.update(trial)
                        expected.pop(j)
                        break
                    else:
                        raise AssertionError(f"{where}: unexpected frame {frame}; still expecting {expected}")
            if "expect_close" in step:
                await _expect_close(raw, step["expect_close"])
    finally:
        await raw.close()


# ------------------------------------------------------------------------------ schema vectors, live


def _request_cases():
    for file_id, doc in SCHEMA_FILES:
        if doc.get("direction", "request") != "request":
            continue
        for case in doc["cases"]:
            yield file_id, case


@pytest.mark.parametrize("encoding", ["json", "msgpack"])
async def test_request_schema_vectors_live(url, encoding):
    """Every request vector gets the expected verdict from the real server (and details.path)."""
    failures: list[str] = []
    shared = await Raw.open(url, encoding)
    await shared.send(HELLO)
    assert (await shared.recv())["type"] == "result"
    try:
        for file_id, case in _request_cases():
            if "raw_json" in case and encoding != "json":
                continue
            if "raw_msgpack_hex" in case and encoding != "msgpack":
                continue
            is_hello = isinstance(case.get("frame"), dict) and case["frame"].get("type") == "hello"
            conn = await Raw.open(url, encoding) if is_hello else shared
            try:
                if "raw_json" in case:
                    await conn.ws.send(case["raw_json"])
                elif "raw_msgpack_hex" in case:
                    await conn.ws.send(bytes.fromhex(case["raw_msgpack_hex"]))
                else:
                    await conn.send(case["frame"])
                reply = await conn.recv()
            finally:
                if is_hello:
                    await conn.close()
            name = f"{file_id}: {case['name']}"
            if case["valid"]:
                # Valid frames pass validation; they may still fail later (e.g. unknown session "s-1").
                if reply["type"] == "error" and reply["error"]["code"] in (
                    "INVALID_MESSAGE",
                    "UNKNOWN_TYPE",
                    "PARSE_ERROR",
                ):
                    failures.append(f"{name}: valid frame refused: {reply['error']}")
            else:
                err = reply.get("error") or {}
                if reply["type"] != "error" or err.get("code") != case["error"]:
                    failures.append(f"{name}: expected {case['error']}, got {reply}")
                elif "path" in case and (err.get("details") or {}).get("path") != case["path"]:
                    failures.append(f"{name}: expected details.path {case['path']!r}, got {err.get('details')}")
    finally:
        await shared.close()
    assert not failures, "\n".join(failures)
