"""The sans-I/O core: ids, routing, timeouts by id, connection loss, errors, events."""

from __future__ import annotations

import json

import pytest

from sandgym import _core, codec
from sandgym._core import Discarded, IdAllocator, ProtocolCore, Rejected, Resolved, ServerEvent, Unroutable
from sandgym.errors import ERROR_CLASSES, ConnectionClosedError, SandgymError


def test_ids_wrap_around_uint32_and_skip_in_flight():
    alloc = IdAllocator(start=_core.UINT32_MAX - 1)
    in_use = {1, 2}
    assert alloc.allocate(in_use) == _core.UINT32_MAX - 1
    assert alloc.allocate(in_use) == _core.UINT32_MAX
    assert alloc.allocate(in_use) == 3  # wrapped past 0 and skipped 1, 2 (still in flight)


def test_core_never_reuses_an_abandoned_id_until_its_late_reply():
    core: ProtocolCore[str] = ProtocolCore("json")
    core._ids = IdAllocator(start=_core.UINT32_MAX)
    rid1, _ = core.request("step", {"session": "s", "action": 0}, "a")
    assert rid1 == _core.UINT32_MAX
    core.abandon(rid1)  # timed out on the client
    rid2, _ = core.request("ping", None, "b")
    assert rid2 == 1
    core._ids = IdAllocator(start=_core.UINT32_MAX)
    rid3, _ = core.request("ping", None, "c")
    assert rid3 == 2  # UINT32_MAX is still reserved (abandoned), 1 is pending
    late = core.receive(json.dumps({"id": rid1, "type": "result", "result": {"observation": 1}}))
    assert late == Discarded(rid1)
    assert isinstance(core.receive(json.dumps({"id": rid2, "type": "result", "result": {}})), Resolved)


def test_routing_by_id_out_of_order():
    core: ProtocolCore[str] = ProtocolCore("msgpack")
    ids = [core.request("step", {"session": "s", "action": i}, f"tok{i}")[0] for i in range(5)]
    for rid in reversed(ids):
        frame = codec.encode_msgpack({"id": rid, "type": "result", "result": {"n": rid}})
        inc = core.receive(frame)
        assert isinstance(inc, Resolved)
        assert inc.token == f"tok{ids.index(rid)}"
        assert inc.result == {"n": rid}
    assert core.pending_count == 0


def test_request_frame_shape():
    core: ProtocolCore[None] = ProtocolCore("json")
    rid, data = core.request("reset", _core.reset_params("s1", 7, {"task": 2}), None)
    assert json.loads(data) == {"id": rid, "type": "reset", "session": "s1", "seed": 7, "options": {"task": 2}}
    rid, data = core.request("hello", _core.hello_params(client_name="t", client_version="1", token=None), None)
    assert json.loads(data) == {
        "id": rid,
        "type": "hello",
        "versions": [_core.PROTOCOL_VERSION],
        "client": {"name": "t", "version": "1"},
    }
    core2: ProtocolCore[None] = ProtocolCore("msgpack")
    _, data2 = core2.request("ping", None, None)
    assert isinstance(data2, bytes) and codec.decode_msgpack(data2) == {"id": 1, "type": "ping"}


def test_unencodable_request_registers_nothing():
    core: ProtocolCore[None] = ProtocolCore("json")
    with pytest.raises(codec.EncodeError):
        core.request("step", {"session": "s", "action": float("nan")}, None)
    assert core.pending_count == 0


def test_max_message_bytes_is_enforced_client_side():
    core: ProtocolCore[None] = ProtocolCore("json", max_message_bytes=100)
    with pytest.raises(codec.EncodeError):
        core.request("step", {"session": "s", "action": "x" * 200}, None)
    assert core.pending_count == 0


@pytest.mark.parametrize("code", sorted(ERROR_CLASSES))
def test_error_reply_maps_to_class(code):
    core: ProtocolCore[str] = ProtocolCore("json")
    rid, _ = core.request("step", {"session": "s", "action": 0}, "t")
    err = {"code": code, "message": "m", "retryable": True, "scope": "session", "details": {"x": 1}}
    inc = core.receive(json.dumps({"id": rid, "type": "error", "error": err}))
    assert isinstance(inc, Rejected) and inc.token == "t"
    assert type(inc.error) is ERROR_CLASSES[code]
    assert (inc.error.code, inc.error.message, inc.error.details, inc.error.retryable, inc.error.scope) == (
        code,
        "m",
        {"x": 1},
        True,
        "session",
    )


def test_unknown_error_code_becomes_base_error():
    err = _core.error_from_wire({"code": "FUTURE_CODE", "message": "?", "retryable": False, "scope": "request"})
    assert type(err) is SandgymError and err.code == "FUTURE_CODE"


def test_null_id_error_is_unroutable_and_keeps_scope():
    core: ProtocolCore[str] = ProtocolCore("json")
    inc = core.receive(
        json.dumps(
            {
                "id": None,
                "type": "error",
                "error": {"code": "TOO_LARGE", "message": "big", "retryable": False, "scope": "connection"},
            }
        )
    )
    assert isinstance(inc, Unroutable) and inc.error.code == "TOO_LARGE" and inc.error.scope == "connection"


def test_events():
    core: ProtocolCore[str] = ProtocolCore("json")
    inc = core.receive(
        json.dumps({"type": "event", "event": "session_closed", "session": "s9", "details": {"reason": "idle"}})
    )
    assert inc == ServerEvent("session_closed", "s9", {"reason": "idle"})
    assert core.receive(json.dumps({"type": "event", "event": "shutdown"})) == ServerEvent("shutdown", None, {})


def test_garbage_frames_are_unroutable_not_fatal():
    core: ProtocolCore[str] = ProtocolCore("json")
    assert isinstance(core.receive("{nope"), Unroutable)
    assert isinstance(core.receive("[1,2]"), Unroutable)
    assert isinstance(core.receive(json.dumps({"id": 99, "type": "result", "result": {}})), Unroutable)


def test_connection_lost_fails_everything_at_once():
    core: ProtocolCore[str] = ProtocolCore("json")
    for i in range(10):
        core.request("ping", None, f"t{i}")
    core.abandon(3)
    exc = ConnectionClosedError("gone", close_code=1006)
    tokens = core.connection_lost(exc)
    assert sorted(tokens) == sorted(f"t{i}" for i in range(10) if i != 2)
    with pytest.raises(ConnectionClosedError):
        core.request("ping", None, "x")


def test_batch_results_mix_results_and_errors():
    out = _core.batch_results(
        {
            "results": [
                {"type": "result", "result": {"observation": 1}},
                {
                    "type": "error",
                    "error": {"code": "RESET_NEEDED", "message": "m", "retryable": False, "scope": "session"},
                },
            ]
        }
    )
    assert out[0] == {"observation": 1}
    assert type(out[1]).__name__ == "ResetNeededError"


def test_reset_params_validates_seed():
    with pytest.raises(TypeError):
        _core.reset_params("s", 1.5, None)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        _core.reset_params("s", True, None)
