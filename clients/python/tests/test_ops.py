"""The operations and the connection state without any socket: what each op puts on the wire, how its
reply is read, how error replies map to exceptions, and the I/O-free state both clients share
(_base.ClientBase: hello, events, close errors, timeouts, CAPACITY retry decisions)."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest
from websockets.frames import Close

from sandgym import _core, codec
from sandgym._base import DEFAULT_TIMEOUT, ClientBase, ConnectOptions, EnvView
from sandgym._core import Op, ProtocolCore, Rejected, Resolved, ServerEvent, Unroutable
from sandgym.errors import (
    ERROR_CLASSES,
    CapacityError,
    ConnectionClosedError,
    RequestTimeoutError,
    ResetNeededError,
    SandgymError,
)


def frame_of(op: Op, encoding: str = "json") -> dict[str, Any]:
    """The decoded frame a fresh connection sends for ``op`` (id 1)."""
    core: ProtocolCore[None] = ProtocolCore(encoding)
    rid, data = core.request(op.type, op.params, None)
    assert rid == 1
    assert isinstance(data, str if encoding == "json" else bytes)
    return codec.decode(data)  # type: ignore[no-any-return]


def reply_to(op: Op, result: Any) -> Any:
    """Route a result reply through the core and read it with the op, as both clients do."""
    core: ProtocolCore[str] = ProtocolCore("json")
    rid, _ = core.request(op.type, op.params, "tok")
    inc = core.receive(json.dumps({"id": rid, "type": "result", "result": result}))
    assert isinstance(inc, Resolved) and inc.token == "tok"
    return op.parse(inc.result)


# ------------------------------------------------------------------ request building


@pytest.mark.parametrize("encoding", ["json", "msgpack"])
def test_each_op_builds_its_frame(encoding):
    cases: list[tuple[Op, dict[str, Any]]] = [
        (
            _core.hello_op(client_name="n", client_version="1", token=None),
            {"type": "hello", "versions": [_core.PROTOCOL_VERSION], "client": {"name": "n", "version": "1"}},
        ),
        (
            _core.hello_op(client_name="n", client_version="1", token="tk"),
            {
                "type": "hello",
                "versions": [_core.PROTOCOL_VERSION],
                "client": {"name": "n", "version": "1"},
                "token": "tk",
            },
        ),
        (_core.list_envs_op(), {"type": "list_envs"}),
        (_core.make_op("test/counter-v0", {}), {"type": "make", "env_id": "test/counter-v0"}),
        (
            _core.make_op("test/slow-v0", {"delay_ms": 5}),
            {"type": "make", "env_id": "test/slow-v0", "kwargs": {"delay_ms": 5}},
        ),
        (_core.reset_op("s1", None, None), {"type": "reset", "session": "s1"}),
        (_core.reset_op("s1", 7, {"task": 2}), {"type": "reset", "session": "s1", "seed": 7, "options": {"task": 2}}),
        (_core.step_op("s1", [1, 2]), {"type": "step", "session": "s1", "action": [1, 2]}),
        (_core.close_op("s1"), {"type": "close", "session": "s1"}),
        (
            _core.batch_op([{"type": "step", "session": "s1", "action": 0}]),
            {"type": "batch", "requests": [{"type": "step", "session": "s1", "action": 0}]},
        ),
    ]
    for op, expected in cases:
        assert frame_of(op, encoding) == {"id": 1, **expected}, op


def test_ping_op_sends_a_timestamp_and_measures_the_round_trip():
    op = _core.ping_op()
    frame = frame_of(op)
    # a whole-millisecond timestamp may cross as an int: only "a number" is the contract
    assert frame["type"] == "ping" and isinstance(frame["t"], (int, float)) and not isinstance(frame["t"], bool)
    elapsed = reply_to(op, {})
    assert isinstance(elapsed, float) and elapsed >= 0


def test_numpy_seed_is_sent_as_a_plain_int():
    np = pytest.importorskip("numpy")
    assert frame_of(_core.reset_op("s", np.int64(3), None))["seed"] == 3


def test_unencodable_action_fails_before_anything_is_registered():
    core: ProtocolCore[None] = ProtocolCore("msgpack")
    op = _core.step_op("s", {"x": float("inf")})
    with pytest.raises(codec.EncodeError):
        core.request(op.type, op.params, None)
    assert core.pending_count == 0


def test_step_many_chunks_by_max_batch():
    ops = _core.step_many_ops(["a", "b", "c", "d", "e"], [0, 1, 2, 3, 4], 2)
    assert [len(op.params["requests"]) for op in ops] == [2, 2, 1]  # type: ignore[index]
    assert ops[2].params == {"requests": [{"type": "step", "session": "e", "action": 4}]}
    assert _core.step_many_ops([], [], 64) == []
    with pytest.raises(ValueError, match="same length"):
        _core.step_many_ops(["a"], [], 64)


# ------------------------------------------------------------------ reading replies


def test_each_op_reads_its_result():
    spec = {"id": "test/counter-v0", "observation_space": {"type": "discrete", "n": 4}}
    assert reply_to(_core.list_envs_op(), {"envs": [spec]}) == [spec]
    assert reply_to(_core.list_envs_op(), {}) == []
    assert reply_to(_core.make_op("x", {}), {"session": "s9", "env_spec": spec}) == ("s9", spec)
    assert reply_to(_core.make_op("x", {}), {"session": "s9"}) == ("s9", {"id": "x"})
    assert reply_to(_core.reset_op("s", None, None), {"observation": 0, "info": {"k": 1}}) == (0, {"k": 1})
    assert reply_to(_core.reset_op("s", None, None), {"observation": 0, "info": None}) == (0, {})
    step = {"observation": [1], "reward": 1, "terminated": True, "truncated": False, "info": {}}
    out = reply_to(_core.step_op("s", 1), step)
    assert out == ([1], 1.0, True, False, {}) and type(out[1]) is float
    assert reply_to(_core.close_op("s"), {}) == {}
    # a result with no "result" member reads as {}
    core: ProtocolCore[str] = ProtocolCore("json")
    rid, _ = core.request("close", {"session": "s"}, "t")
    assert core.receive(json.dumps({"id": rid, "type": "result"})) == Resolved("t", rid, {})


def test_batch_and_step_many_read_results_and_errors_in_order():
    err = {"code": "RESET_NEEDED", "message": "m", "retryable": False, "scope": "session"}
    ok = {"observation": 2, "reward": 0.5, "terminated": False, "truncated": True, "info": {}}
    results = {"results": [{"type": "result", "result": ok}, {"type": "error", "error": err}, 3]}
    out = reply_to(_core.batch_op([]), results)
    assert out[0] == ok and isinstance(out[1], ResetNeededError) and out[2].code == "INVALID_MESSAGE"
    (op,) = _core.step_many_ops(["a", "b"], [0, 1], 64)
    steps = reply_to(op, {"results": results["results"][:2]})
    assert steps[0] == (2, 0.5, False, True, {}) and isinstance(steps[1], ResetNeededError)


@pytest.mark.parametrize("code", sorted(ERROR_CLASSES))
def test_an_error_reply_to_any_op_maps_to_its_class(code):
    core: ProtocolCore[str] = ProtocolCore("msgpack")
    op = _core.step_op("s", 0)
    rid, _ = core.request(op.type, op.params, "t")
    err = {"code": code, "message": "m", "retryable": False, "scope": "request", "details": {"d": 1}}
    inc = core.receive(codec.encode_msgpack({"id": rid, "type": "error", "error": err}))
    assert isinstance(inc, Rejected) and type(inc.error) is ERROR_CLASSES[code]
    assert (inc.error.code, inc.error.details) == (code, {"d": 1})


# ------------------------------------------------------------------ the shared client state


class Base(ClientBase[str]):
    """ClientBase with the one hook a layer must provide: completing a call (here: recording it)."""

    def __init__(self, close_frame: Close | None = None, **options: Any) -> None:
        super().__init__("ws://test", ConnectOptions(**options))
        self._ws = SimpleNamespace(protocol=SimpleNamespace(close_rcvd=close_frame, close_sent=None))
        self.finished: list[tuple[str, Any, BaseException | None]] = []

    def _finish(self, token: str, result: Any, error: BaseException | None) -> None:
        self.finished.append((token, result, error))


def test_connect_options_defaults_and_validation():
    opts = ConnectOptions()
    assert (opts.encoding, opts.timeout, opts.connect_timeout, opts.capacity_max_attempts) == (
        "json",
        DEFAULT_TIMEOUT,
        10.0,
        8,
    )
    with pytest.raises(ValueError, match="unknown encoding"):
        ConnectOptions(encoding="xml")
    with pytest.raises(TypeError):
        ConnectOptions(tokn="x")  # type: ignore[call-arg]
    ws = ConnectOptions(token="tk", client_name="me", client_version="2").ws_options()
    assert ws["additional_headers"] == {"Authorization": "Bearer tk"} and ws["compression"] is None
    assert ws["user_agent_header"].startswith("me/2 sandgym-python/")
    assert ConnectOptions().ws_options()["additional_headers"] is None
    assert frame_of(ConnectOptions(token="tk").hello_op())["token"] == "tk"


def test_hello_sets_limits_and_the_client_side_size_check():
    base = Base()
    base._on_hello(
        {
            "version": _core.PROTOCOL_VERSION,
            "server": {"name": "s"},
            "capabilities": {"batch": True},
            "limits": {"max_message_bytes": 64, "max_batch": 3},
        }
    )
    assert (base.protocol_version, base.server_info, base.capabilities) == (
        _core.PROTOCOL_VERSION,
        {"name": "s"},
        {"batch": True},
    )
    with pytest.raises(codec.EncodeError, match="max_message_bytes"):
        base._core.request("step", {"session": "s", "action": "x" * 100}, "t")
    envs = [EnvView(base, f"s{i}", {}) for i in range(4)]
    assert [len(op.params["requests"]) for op in base._step_many_ops(envs, [0] * 4)] == [3, 1]  # type: ignore[index]


def test_dispatch_completes_calls_and_applies_events():
    base = Base()
    env = base._register(EnvView(base, "s1", {"id": "e"}))
    other = base._register(EnvView(base, "s2", {"id": "e"}))
    rid, _ = base._core.request("step", {"session": "s1", "action": 0}, "call-1")
    assert (
        base._dispatch(base._core.receive(json.dumps({"id": rid, "type": "result", "result": {"observation": 1}})))
        is None
    )
    assert base.finished == [("call-1", {"observation": 1}, None)]
    ev = base._dispatch(
        base._core.receive(
            json.dumps({"type": "event", "event": "session_closed", "session": "s1", "details": {"reason": "idle"}})
        )
    )
    assert ev == ServerEvent("session_closed", "s1", {"reason": "idle"})
    assert env.closed and env.closed_reason == {"reason": "idle"} and not other.closed
    assert base.open_sessions == 1 and base.events == [ev]
    base._dispatch(base._core.receive(json.dumps({"type": "event", "event": "shutdown"})))
    assert base.shutting_down


def test_a_connection_error_before_the_close_becomes_the_cause():
    base = Base(close_frame=Close(1009, "too big"))
    env = base._register(EnvView(base, "s1", {}))
    base._core.request("step", {"session": "s1", "action": 0}, "pending")
    err = {"code": "TOO_LARGE", "message": "frame too large", "retryable": False, "scope": "connection"}
    inc = base._core.receive(json.dumps({"id": None, "type": "error", "error": err}))
    assert isinstance(inc, Unroutable) and base._dispatch(inc) is None
    base._fail_all(None)
    ((token, _, exc),) = base.finished
    assert token == "pending" and isinstance(exc, ConnectionClosedError)
    assert (exc.close_code, exc.close_reason, exc.cause_error.code) == (1009, "too big", "TOO_LARGE")
    assert "code 1009: too big" in str(exc) and "after TOO_LARGE" in str(exc)
    assert env.closed and base._closed_exc is exc
    assert env._close_op() is None  # the connection took the session with it: nothing to send
    base._fail_all(None)
    assert len(base.finished) == 1  # once only


def test_env_close_op_is_sent_once():
    base = Base()
    env = EnvView(base, "s1", {})
    op = env._close_op()
    assert op is not None and frame_of(op) == {"id": 1, "type": "close", "session": "s1"}
    assert env.closed and env._close_op() is None


def test_batch_items_name_their_session_by_handle():
    base = Base()
    env = EnvView(base, "s7", {})
    op = base._batch_op(
        [
            {"type": "step", "env": env, "action": 1},
            {"type": "reset", "session": env},
            {"type": "close", "session": "s8"},
        ]
    )
    assert op.params == {
        "requests": [
            {"type": "step", "session": "s7", "action": 1},
            {"type": "reset", "session": "s7"},
            {"type": "close", "session": "s8"},
        ]
    }


def test_capacity_retry_decisions():
    capacity = CapacityError("busy", code="CAPACITY", details={"retry_after_ms": 200})
    other = SandgymError("bad", code="INVALID_ACTION")
    assert Base()._retry_delay(capacity, 1) is None  # retries are opt-in
    base = Base(retry_capacity=True, capacity_max_attempts=3, capacity_max_delay=1.0)
    assert base._retry_delay(other, 1) is None
    assert 0.2 <= base._retry_delay(capacity, 1) <= 0.25  # type: ignore[operator]
    assert base._retry_delay(capacity, 3) is None  # attempts used up
    plain = CapacityError("busy", code="CAPACITY")
    assert base._retry_delay(plain, 2) <= 1.0  # type: ignore[operator]


def test_timeout_error_names_the_request():
    err = ClientBase._timeout_error(5, "step", 0.25)
    assert isinstance(err, RequestTimeoutError) and isinstance(err, TimeoutError)
    assert err.details == {"id": 5, "type": "step", "timeout_s": 0.25} and "0.25 s" in str(err)
