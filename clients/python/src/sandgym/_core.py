"""Sans-I/O protocol core: request ids, framing, reply routing, error mapping, events, and the
operations (what each call sends and how its result is read).

Nothing here touches a socket, a thread or an event loop. The I/O layers (:mod:`sandgym.client`
for asyncio, :mod:`sandgym.sync` over websockets' blocking API with leader/follower reads) feed
received frames to :meth:`ProtocolCore.receive` and send what :meth:`ProtocolCore.request` returns;
the core tells them which pending call a reply belongs to. Each pending call carries an opaque
``token`` of the layer's choosing (a future).

Every operation (``ping``, ``make``, ``reset``, ``step``, ...) is an :class:`Op`: the request type,
its params and the function that turns the reply's ``result`` into the return value. Both layers
send the same ``Op`` the same way, so the two clients cannot put different frames on the wire or
read a reply differently (the way python-websockets keeps its protocol in one sans-I/O object under
thin asyncio and threading layers).

Why ids matter: a reply is routed only by its id, never by arrival order, so a call that timed out
on the client side can never hand its late answer to the next call (the failure mode of protocols
without ids). A timed-out id is kept reserved ("abandoned") until its late reply arrives and is
dropped, so it cannot be reused while the server may still answer it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from . import codec
from .errors import ConnectionClosedError, SandgymError, error_from_wire

__all__ = [
    "PROTOCOL_VERSION",
    "UINT32_MAX",
    "IdAllocator",
    "ProtocolCore",
    "Resolved",
    "Rejected",
    "ServerEvent",
    "Discarded",
    "Unroutable",
    "Incoming",
    "Op",
    "QueueProgress",
    "Scheduling",
    "StepResult",
]

PROTOCOL_VERSION = 2
UINT32_MAX = 2**32 - 1

T = TypeVar("T")


class IdAllocator:
    """Allocates request ids in ``[1, 2^32-1]``, wrapping around and skipping ids still in use."""

    def __init__(self, start: int = 1) -> None:
        if not 1 <= start <= UINT32_MAX:
            raise ValueError("start must be in [1, 2^32-1]")
        self._next = start

    def allocate(self, in_use: Any) -> int:
        """Return the next id not contained in ``in_use`` (anything supporting ``in``)."""
        for _ in range(UINT32_MAX):
            i = self._next
            self._next = 1 if i >= UINT32_MAX else i + 1
            if i not in in_use:
                return i
        raise RuntimeError("all 2^32-1 request ids are in flight")  # pragma: no cover


@dataclass(frozen=True)
class Resolved(Generic[T]):
    """A result reply for a pending call."""

    token: T
    id: int
    result: Any


@dataclass(frozen=True)
class Rejected(Generic[T]):
    """An error reply for a pending call (``error`` is the mapped exception)."""

    token: T
    id: int
    error: SandgymError


@dataclass(frozen=True)
class ServerEvent:
    """A server-originated event (``session_closed``, ``shutdown``, ...)."""

    event: str
    session: str | None = None
    details: dict[str, Any] = field(default_factory=dict)


#: Events about a request waiting in the admission queue (PROTOCOL.md §6a); ``details.request`` is its id.
QUEUE_EVENTS = frozenset({"queued", "admitted"})


@dataclass(frozen=True)
class Scheduling:
    """How a ``make``, ``reset`` or ``group`` is scheduled on a server with ``capabilities.scheduling``
    (PROTOCOL.md §6a). Every field is optional; an unset one is not sent (the server's default, or the
    session's from ``make`` for a ``reset``).

    ``priority``: a class the operator granted this client's token (``client.limits["priority_classes"]``,
    highest first); a class above the grant is refused with ``INVALID_ARGUMENT``. ``queue_timeout_ms``:
    how long the request may wait for its sandbox(es) before ``CAPACITY`` (``details.reason ==
    "queue_timeout"``), capped by ``limits.max_queue_timeout_ms``; 0 = only if one is free now.
    ``preemptible``: the server may reclaim the sandbox for higher-priority work; the session then
    fails with :class:`~sandgym.errors.PreemptedError` (never a reward: run the episode again).

    The values are checked for their type here; what the server accepts (class names, caps) is the
    server's to say.
    """

    priority: str | None = None
    queue_timeout_ms: int | None = None
    preemptible: bool | None = None

    def __post_init__(self) -> None:
        if self.priority is not None and (not isinstance(self.priority, str) or not self.priority):
            raise TypeError(f"priority must be a non-empty str, got {self.priority!r}")
        q = self.queue_timeout_ms
        if q is not None and (isinstance(q, bool) or not isinstance(q, int)):
            raise TypeError(f"queue_timeout_ms must be an int (milliseconds), got {type(q).__name__}")
        if q is not None and q < 0:
            raise ValueError(f"queue_timeout_ms must be >= 0, got {q}")
        if self.preemptible is not None and not isinstance(self.preemptible, bool):
            raise TypeError(f"preemptible must be a bool, got {type(self.preemptible).__name__}")

    def params(self) -> dict[str, Any]:
        """The request fields (only the ones set)."""
        out: dict[str, Any] = {}
        if self.priority is not None:
            out["priority"] = self.priority
        if self.queue_timeout_ms is not None:
            out["queue_timeout_ms"] = self.queue_timeout_ms
        if self.preemptible is not None:
            out["preemptible"] = self.preemptible
        return out


def _opt_int(v: Any) -> int | None:
    return v if type(v) is int else None


@dataclass(frozen=True)
class QueueProgress:
    """A ``queued`` or ``admitted`` event for one request (PROTOCOL.md §6a), handed to the request's
    ``on_queue`` callback. ``queued``: ``position`` (requests the scheduler considers first),
    ``units_ahead`` (the sandboxes they need), ``estimated_wait_ms`` (None until the server has
    observed a hold time) and the granted ``priority``; sent when the request is queued, then at most
    once a second while the figures change. ``admitted``: ``waited_ms``; the reply follows once the
    sandboxes exist. ``session`` is set when the request was a batch item."""

    event: str
    request: int
    session: str | None = None
    position: int | None = None
    units_ahead: int | None = None
    estimated_wait_ms: int | None = None
    priority: str | None = None
    waited_ms: int | None = None

    @classmethod
    def from_event(cls, ev: ServerEvent) -> QueueProgress:
        d = ev.details
        prio = d.get("priority")
        return cls(
            event=ev.event,
            request=int(d.get("request", 0)),
            session=ev.session,
            position=_opt_int(d.get("position")),
            units_ahead=_opt_int(d.get("units_ahead")),
            estimated_wait_ms=_opt_int(d.get("estimated_wait_ms")),
            priority=prio if isinstance(prio, str) else None,
            waited_ms=_opt_int(d.get("waited_ms")),
        )


@dataclass(frozen=True)
class Discarded:
    """A late reply to a call that had already timed out on the client side; dropped by id."""

    id: int


@dataclass(frozen=True)
class Unroutable:
    """A frame that belongs to no pending call: an error with ``id: null`` (e.g. a connection-scoped
    error sent before a close), a reply for an unknown id, or an undecodable frame."""

    error: SandgymError
    frame: Any = None
    #: An error frame with ``id: null`` and request (or session) scope: it answers some call the server
    #: could not read the id of. A conforming server never sends one for a frame this client encoded
    #: (PROTOCOL.md §2); when one comes anyway, the pending calls are failed rather than left waiting.
    answers_unknown_call: bool = False


Incoming = Resolved[T] | Rejected[T] | ServerEvent | Discarded | Unroutable


class ProtocolCore(Generic[T]):
    """Per-connection protocol state. ``encoding`` is ``"json"`` (text frames) or ``"msgpack"``."""

    def __init__(self, encoding: str = "json", *, max_message_bytes: int | None = None) -> None:
        if encoding not in ("json", "msgpack"):
            raise ValueError(f"unknown encoding {encoding!r} (use 'json' or 'msgpack')")
        self.encoding = encoding
        self.max_message_bytes = max_message_bytes
        self._ids = IdAllocator()
        self._pending: dict[int, tuple[str, T]] = {}
        self._abandoned: set[int] = set()
        self._in_use = _InUse(self._pending, self._abandoned)
        self.closed: ConnectionClosedError | None = None
        self._encode = codec.encode_json if encoding == "json" else codec.encode_msgpack
        #: Keep each pending request's frame (set when the server offers resume): a resume re-sends
        #: the ones the server says it never received (PROTOCOL.md §5a).
        self.keep_frames = False
        self._frames: dict[int, str | bytes] = {}
        #: Per-request progress callbacks (``queued``/``admitted`` events name the request by id,
        #: PROTOCOL.md §6a), dropped with the request's reply.
        self._watch: dict[int, Callable[[QueueProgress], Any]] = {}

    # ------------------------------------------------------------------ outgoing

    @property
    def pending_count(self) -> int:
        return len(self._pending)

    def request(
        self, type_: str, params: dict[str, Any] | None, token: T, watch: Callable[[QueueProgress], Any] | None = None
    ) -> tuple[int, str | bytes]:
        """Allocate an id, encode ``{"id", "type", **params}`` and register ``token`` for the reply
        (and ``watch`` for the request's ``queued``/``admitted`` events until then).

        Raises :class:`ConnectionClosedError` after :meth:`connection_lost`, ``codec.EncodeError``
        for values that cannot go on the wire (nothing is registered then), and ``ValueError`` when
        the frame exceeds the server's ``max_message_bytes`` (the server would close the connection).
        """
        if self.closed is not None:
            raise self.closed
        rid = self._ids.allocate(self._in_use)
        msg: dict[str, Any] = {"id": rid, "type": type_}
        if params:
            msg.update(params)
        data = self._encode(msg)
        limit = self.max_message_bytes
        if limit is not None:
            size = len(data.encode("utf-8")) if isinstance(data, str) else len(data)
            if size > limit:
                raise codec.EncodeError(f"{type_} request is {size} bytes, over the server's max_message_bytes {limit}")
        self._pending[rid] = (type_, token)
        if self.keep_frames:
            self._frames[rid] = data
        if watch is not None:
            self._watch[rid] = watch
        return rid, data

    def cancel(self, rid: int) -> None:
        """Forget a request that was never sent (e.g. the send itself failed)."""
        self._pending.pop(rid, None)
        self._frames.pop(rid, None)
        self._watch.pop(rid, None)

    def abandon(self, rid: int) -> None:
        """The caller stopped waiting (client-side timeout / cancellation): keep the id reserved until
        the late reply arrives, then drop that reply."""
        self._frames.pop(rid, None)
        self._watch.pop(rid, None)
        if self._pending.pop(rid, None) is not None:
            self._abandoned.add(rid)

    # ------------------------------------------------------------------ resume (PROTOCOL.md §5a)

    def pending_ids(self) -> list[int]:
        """Ids of the calls still waiting for a reply, oldest first."""
        return list(self._pending)

    def frame_of(self, rid: int) -> str | bytes | None:
        """The frame a pending call sent (kept only with ``keep_frames``), to send it again."""
        return self._frames.get(rid) if rid in self._pending else None

    def take(self, rids: Iterable[int], *, reserve: bool) -> list[tuple[int, str, T]]:
        """Pops these pending calls (``(id, type, token)`` each) for the caller to fail; with
        ``reserve`` their ids stay reserved and a late reply is dropped."""
        out: list[tuple[int, str, T]] = []
        for rid in rids:
            entry = self._pending.pop(rid, None)
            self._frames.pop(rid, None)
            self._watch.pop(rid, None)
            if entry is None:
                continue
            if reserve:
                self._abandoned.add(rid)
            out.append((rid, entry[0], entry[1]))
        return out

    # ------------------------------------------------------------------ incoming

    def receive(self, data: str | bytes) -> Incoming[T]:
        """Interpret one received frame."""
        try:
            msg = codec.decode(data)
        except codec.DecodeError as exc:
            return Unroutable(SandgymError(str(exc), code="PARSE_ERROR"), data)
        return self.receive_message(msg)

    def receive_message(self, msg: Any) -> Incoming[T]:
        if not isinstance(msg, dict):
            return Unroutable(SandgymError(f"frame is not an object: {msg!r}", code="INVALID_MESSAGE"), msg)
        kind = msg.get("type")
        if kind == "event":
            details = msg.get("details")
            session = msg.get("session")
            return ServerEvent(
                str(msg.get("event", "")),
                session if isinstance(session, str) else None,
                dict(details) if isinstance(details, dict) else {},
            )
        rid = msg.get("id")
        if kind == "result":
            if type(rid) is not int:
                return Unroutable(SandgymError("result without id", code="INVALID_MESSAGE"), msg)
            return self._route(rid, msg, None)
        if kind == "error":
            err = error_from_wire(msg.get("error"))
            if type(rid) is not int:
                return Unroutable(err, msg, answers_unknown_call=rid is None and err.scope != "connection")
            return self._route(rid, msg, err)
        return Unroutable(SandgymError(f"unknown frame type {kind!r}", code="INVALID_MESSAGE"), msg)

    def _route(self, rid: int, msg: dict[str, Any], err: SandgymError | None) -> Incoming[T]:
        entry = self._pending.pop(rid, None)
        self._frames.pop(rid, None)
        self._watch.pop(rid, None)
        if entry is None:
            if rid in self._abandoned:
                self._abandoned.discard(rid)
                return Discarded(rid)
            return Unroutable(err or SandgymError(f"reply for unknown id {rid}", code="INVALID_MESSAGE"), msg)
        _, token = entry
        if err is not None:
            return Rejected(token, rid, err)
        result = msg.get("result")
        return Resolved(token, rid, result if result is not None else {})

    def fail_pending(self) -> list[T]:
        """Every pending call, given up on (its id stays reserved and a late reply is dropped): for an
        ``id: null`` error that must answer one of them, though nobody can tell which."""
        tokens = [tok for _, tok in self._pending.values()]
        self._abandoned.update(self._pending)
        self._pending.clear()
        self._frames.clear()
        self._watch.clear()
        return tokens

    def connection_lost(self, exc: ConnectionClosedError) -> list[T]:
        """The connection is gone: returns every pending token (all fail at once with ``exc``)."""
        self.closed = exc
        tokens = [tok for _, tok in self._pending.values()]
        self._pending.clear()
        self._abandoned.clear()
        self._frames.clear()
        self._watch.clear()
        return tokens

    def progress(self, ev: ServerEvent) -> tuple[Callable[[QueueProgress], Any], QueueProgress] | None:
        """The callback a ``queued``/``admitted`` event is for (the pending request it names, when that
        request was sent with one) and the event as a :class:`QueueProgress`; None otherwise."""
        if ev.event not in QUEUE_EVENTS or not self._watch:
            return None
        rid = ev.details.get("request")
        if type(rid) is not int:
            return None
        watch = self._watch.get(rid)
        if watch is None:
            return None
        return watch, QueueProgress.from_event(ev)


class _InUse:
    """``id in in_use`` over pending and abandoned ids without building a union set per call."""

    __slots__ = ("_a", "_b")

    def __init__(self, a: dict[int, Any], b: set[int]) -> None:
        self._a, self._b = a, b

    def __contains__(self, rid: object) -> bool:
        return rid in self._a or rid in self._b


# ---------------------------------------------------------------------- request builders
# Small pure helpers shared by the async and sync layers (and the tests).


def hello_params(
    *,
    client_name: str,
    client_version: str,
    token: str | None,
    versions: Iterable[int] = (PROTOCOL_VERSION,),
    client_group: str | None = None,
) -> dict[str, Any]:
    params: dict[str, Any] = {
        "versions": list(versions),
        "client": {"name": client_name, "version": client_version},
    }
    if token is not None:
        params["token"] = token
    if client_group is not None:
        if not isinstance(client_group, str) or not client_group:
            raise TypeError(f"client_group must be a non-empty str, got {client_group!r}")
        params["client_group"] = client_group
    return params


def reset_params(session: str, seed: int | None, options: dict[str, Any] | None) -> dict[str, Any]:
    params: dict[str, Any] = {"session": session}
    if seed is not None:
        if isinstance(seed, bool) or (not isinstance(seed, int) and not _is_np_int(seed)):
            raise TypeError(f"seed must be an int, got {type(seed).__name__}")
        params["seed"] = int(seed)
    if options is not None:
        params["options"] = options
    return params


def _is_np_int(x: Any) -> bool:
    try:
        import numpy as np
    except ImportError:  # pragma: no cover
        return False
    return isinstance(x, np.integer)


def batch_results(result: Any) -> list[Any]:
    """Map a batch reply's ``results`` to values (results) or :class:`SandgymError` instances."""
    out: list[Any] = []
    for item in (result or {}).get("results", []):
        if isinstance(item, dict) and item.get("type") == "error":
            out.append(error_from_wire(item.get("error")))
        elif isinstance(item, dict):
            out.append(item.get("result", {}))
        else:
            out.append(SandgymError(f"malformed batch item {item!r}", code="INVALID_MESSAGE"))
    return out


# ---------------------------------------------------------------------- operations
# One function per protocol operation: the frame it sends and how its result is read. The async and
# blocking clients only carry an Op to the server and its result back (Op.parse).

StepResult = tuple[Any, float, bool, bool, dict[str, Any]]


def _identity(result: Any) -> Any:
    return result


class Op:
    """One request to send (``type``, ``params``) and how its ``result`` becomes the return value;
    ``watch``: called with each :class:`QueueProgress` of the request while it waits for a sandbox."""

    __slots__ = ("params", "parse", "type", "watch")

    def __init__(
        self,
        type_: str,
        params: dict[str, Any] | None,
        parse: Callable[[Any], Any] = _identity,
        watch: Callable[[QueueProgress], Any] | None = None,
    ) -> None:
        self.type = type_
        self.params = params
        self.parse = parse
        self.watch = watch

    def __repr__(self) -> str:
        return f"Op({self.type!r}, {self.params!r})"


def step_tuple(res: Mapping[str, Any]) -> StepResult:
    """A step result as ``(observation, reward, terminated, truncated, info)``."""
    return (
        res.get("observation"),
        float(res.get("reward", 0.0)),
        bool(res.get("terminated", False)),
        bool(res.get("truncated", False)),
        dict(res.get("info") or {}),
    )


def _reset_pair(res: Mapping[str, Any]) -> tuple[Any, dict[str, Any]]:
    return res.get("observation"), dict(res.get("info") or {})


def _envs_list(res: Mapping[str, Any]) -> list[dict[str, Any]]:
    return list(res.get("envs", []))


def hello_op(*, client_name: str, client_version: str, token: str | None, client_group: str | None = None) -> Op:
    """The handshake; its result (version, server, capabilities, limits) is returned as is."""
    return Op(
        "hello",
        hello_params(client_name=client_name, client_version=client_version, token=token, client_group=client_group),
    )


def ping_op() -> Op:
    """A round trip; its value is the seconds from building the op to reading the reply."""
    t0 = time.perf_counter()
    return Op("ping", {"t": time.time() * 1000.0}, lambda _res: time.perf_counter() - t0)


def _resume_result(res: Any) -> Mapping[str, Any]:
    # Checked here, inside the call: a result of another shape used to raise from the code that
    # applies it (outside the reconnect's error handling), killing the reconnect and leaving every
    # call that waited for it hanging (tests/test_resume_attacks.py).
    def ids(v: Any) -> bool:
        return isinstance(v, list) and all(isinstance(i, int) and not isinstance(i, bool) for i in v)

    if (
        not isinstance(res, Mapping)
        or not isinstance(res.get("resume_token"), str)
        or not isinstance(res.get("sessions"), list)
        or not all(isinstance(s, str) for s in res["sessions"])
        or not ids(res.get("unseen"))
        or not ids(res.get("lost"))
    ):
        raise SandgymError(f"malformed resume result: {str(res)[:200]}", code="INTERNAL")
    return res


def resume_op(token: str, pending: Sequence[int]) -> Op:
    """Reattach a dropped connection's sessions (PROTOCOL.md §5a); its value is the result, checked:
    ``{resume_token, sessions, unseen, lost}`` (another shape raises an ``INTERNAL`` SandgymError)."""
    return Op("resume", {"token": token, "pending": list(pending)}, _resume_result)


def list_envs_op() -> Op:
    return Op("list_envs", None, _envs_list)


Watch = Callable[[QueueProgress], Any]


def _scheduling(scheduling: Scheduling | None) -> dict[str, Any]:
    if scheduling is None:
        return {}
    if not isinstance(scheduling, Scheduling):
        raise TypeError(f"scheduling must be a sandgym.Scheduling, got {type(scheduling).__name__}")
    return scheduling.params()


def make_op(
    env_id: str, kwargs: Mapping[str, Any], scheduling: Scheduling | None = None, watch: Watch | None = None
) -> Op:
    """Create a session; its value is ``(session, env_spec)`` (the spec defaults to ``{"id": env_id}``).
    ``scheduling`` sets the session's scheduling defaults (PROTOCOL.md §6a)."""
    params: dict[str, Any] = {"env_id": env_id}
    if kwargs:
        params["kwargs"] = dict(kwargs)
    params.update(_scheduling(scheduling))
    return Op("make", params, lambda res: (res["session"], res.get("env_spec") or {"id": env_id}), watch)


def reset_op(
    session: str,
    seed: int | None,
    options: dict[str, Any] | None,
    scheduling: Scheduling | None = None,
    watch: Watch | None = None,
) -> Op:
    """Start an episode; ``scheduling`` overrides the session's defaults for this episode's admission."""
    params = reset_params(session, seed, options)
    params.update(_scheduling(scheduling))
    return Op("reset", params, _reset_pair, watch)


def _group_result(res: Any) -> tuple[str, list[str], dict[str, Any]]:
    if (
        not isinstance(res, Mapping)
        or not isinstance(res.get("group"), str)
        or not isinstance(res.get("sessions"), list)
        or not res["sessions"]
        or not all(isinstance(s, str) for s in res["sessions"])
    ):
        raise SandgymError(f"malformed group result: {str(res)[:200]}", code="INTERNAL")
    spec = res.get("env_spec")
    return res["group"], list(res["sessions"]), dict(spec) if isinstance(spec, Mapping) else {}


def group_op(
    env_id: str, size: int, kwargs: Mapping[str, Any], scheduling: Scheduling | None = None, watch: Watch | None = None
) -> Op:
    """Make ``size`` sessions of ``env_id`` admitted as one unit (a GRPO group, PROTOCOL.md §6a); its
    value is ``(group, sessions, env_spec)``."""
    if isinstance(size, bool) or not isinstance(size, int):
        raise TypeError(f"size must be an int, got {type(size).__name__}")
    if size < 1:
        raise ValueError(f"size must be >= 1, got {size}")
    params: dict[str, Any] = {"env_id": env_id, "size": size}
    if kwargs:
        params["kwargs"] = dict(kwargs)
    params.update(_scheduling(scheduling))
    spec_default = {"id": env_id}
    return Op("group", params, lambda res: _with_spec(_group_result(res), spec_default), watch)


def _with_spec(
    r: tuple[str, list[str], dict[str, Any]], default: dict[str, Any]
) -> tuple[str, list[str], dict[str, Any]]:
    return r[0], r[1], r[2] or default


def step_op(session: str, action: Any) -> Op:
    return Op("step", {"session": session, "action": action}, step_tuple)


def close_op(session: str) -> Op:
    return Op("close", {"session": session})


def batch_op(items: list[dict[str, Any]]) -> Op:
    """reset/step/close items in one frame; its value is one result dict or error instance per item."""
    return Op("batch", {"requests": items}, batch_results)


def _step_results(res: Any) -> list[StepResult | SandgymError]:
    return [r if isinstance(r, SandgymError) else step_tuple(r) for r in batch_results(res)]


def step_many_ops(sessions: Sequence[str], actions: Sequence[Any], max_batch: int) -> list[Op]:
    """``batch`` ops stepping ``sessions[i]`` with ``actions[i]``, at most ``max_batch`` items each;
    each op's value is a list of step tuples (or error instances)."""
    if len(sessions) != len(actions):
        raise ValueError("envs and actions must have the same length")
    return [
        Op(
            "batch",
            {
                "requests": [
                    {"type": "step", "session": s, "action": a}
                    for s, a in zip(sessions[i : i + max_batch], actions[i : i + max_batch], strict=True)
                ]
            },
            _step_results,
        )
        for i in range(0, len(sessions), max_batch)
    ]
