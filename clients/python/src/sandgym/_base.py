"""The I/O-free half of both clients: connection state, hello, events, close and timeout errors,
CAPACITY retry decisions, and the env handle's spec view.

:class:`ClientBase` is what :class:`~sandgym.client.AsyncClient` and :class:`~sandgym.sync.Client`
share; each adds only its I/O (how to send a frame, wait for a reply, sleep, read the socket) and
the one-line public methods that carry an :class:`~sandgym._core.Op` through it. Nothing here
touches a socket, a thread or an event loop, so it is tested without any (tests/test_base.py).
"""

from __future__ import annotations

import logging
import random
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from . import _core, codec
from ._core import (
    Discarded,
    Incoming,
    Op,
    ProtocolCore,
    QueueProgress,
    Rejected,
    Resolved,
    Scheduling,
    ServerEvent,
    Unroutable,
)
from ._version import __version__
from .errors import ConnectionClosedError, RequestTimeoutError, ResumeExpiredError, SandgymError

__all__ = [
    "ClientBase",
    "ConnectOptions",
    "EnvView",
    "GroupView",
    "DEFAULT_TIMEOUT",
    "EventHandler",
    "QueueCallback",
    "UNSET",
]

log = logging.getLogger("sandgym")

#: Default client-side per-request timeout in seconds. Never wait forever on a wedged server; the
#: server's own step deadline (limits.step_timeout_ms) normally fires long before this.
DEFAULT_TIMEOUT = 300.0

#: "use the client's timeout" (``None`` already means "wait forever")
UNSET: Any = object()

EventHandler = Callable[[ServerEvent], Any]
#: ``on_queue`` of make/reset/group: called with each ``queued``/``admitted`` event of that request
#: (a coroutine function is fine on the asyncio client)
QueueCallback = Callable[[QueueProgress], Any]

T = TypeVar("T")  # the layer's pending-call token (a future, a waiter)
E = TypeVar("E", bound="EnvView")

#: server events kept in ``client.events`` (the oldest half is dropped beyond this)
_MAX_EVENTS = 256


def check_encoding(encoding: str) -> None:
    if encoding not in ("json", "msgpack"):
        raise ValueError(f"unknown encoding {encoding!r} (use 'json' or 'msgpack')")


@dataclass(frozen=True)
class ConnectOptions:
    """The keyword options of ``AsyncClient.connect(url, ...)`` and ``Client(url, ...)``, declared
    once for both.

    ``token``: bearer token. ``encoding``: ``"json"`` (text frames) or ``"msgpack"`` (binary).
    ``client_name`` / ``client_version``: sent in ``hello`` and the User-Agent. ``timeout``: client-side
    per-request timeout in seconds (None = wait forever). ``connect_timeout``: for the opening handshake
    and ``hello``. ``retry_capacity`` / ``capacity_max_attempts`` / ``capacity_max_delay``: retry
    requests refused with ``CAPACITY``. ``on_event``: called with each server event. ``max_size``:
    largest frame accepted from the server (bytes; None = no limit). ``reconnect``: after an
    unexpected drop, reconnect and resume the sessions when the server offers resume (PROTOCOL.md
    §5a); False fails the pending calls at once instead. ``client_group``: on a server without tokens,
    the fairness key sent in ``hello`` (connections with the same group share one fair share of the
    sandboxes, PROTOCOL.md §6a). ``scheduling``: the :class:`~sandgym.Scheduling` of every ``make`` and
    ``group`` that passes none.
    """

    token: str | None = None
    encoding: str = "json"
    client_name: str = "sandgym-python"
    client_version: str = __version__
    timeout: float | None = DEFAULT_TIMEOUT
    connect_timeout: float = 10.0
    retry_capacity: bool = False
    capacity_max_attempts: int = 8
    capacity_max_delay: float = 10.0
    on_event: EventHandler | None = None
    max_size: int | None = 256 * 1024 * 1024
    reconnect: bool = True
    client_group: str | None = None
    scheduling: Scheduling | None = None

    def __post_init__(self) -> None:
        check_encoding(self.encoding)
        if self.scheduling is not None and not isinstance(self.scheduling, Scheduling):
            raise TypeError(f"scheduling must be a sandgym.Scheduling, got {type(self.scheduling).__name__}")
        if self.client_group is not None and (not isinstance(self.client_group, str) or not self.client_group):
            raise TypeError(f"client_group must be a non-empty str, got {self.client_group!r}")

    def ws_options(self) -> dict[str, Any]:
        """The websockets ``connect`` options (auth header, no compression, user agent)."""
        return connect_options(self.token, self.connect_timeout, self.max_size, self.client_name, self.client_version)

    def hello_op(self) -> Op:
        return _core.hello_op(
            client_name=self.client_name,
            client_version=self.client_version,
            token=self.token,
            client_group=self.client_group,
        )


class ClientBase(Generic[T]):
    """Connection state shared by the asyncio and blocking clients. Subclasses provide ``_ws`` and
    ``_finish(token, result, error)`` (complete one pending call)."""

    _ws: Any
    #: The layer reconnects and resumes after a drop (both clients do; a subclass may not).
    _supports_resume = False

    def __init__(self, url: str, options: ConnectOptions) -> None:
        self.url = url
        self.encoding = options.encoding
        self.timeout = options.timeout
        self.retry_capacity = options.retry_capacity
        self.capacity_max_attempts = max(1, options.capacity_max_attempts)
        self.capacity_max_delay = options.capacity_max_delay
        self.on_event = options.on_event
        self.server_info: dict[str, Any] = {}
        self.capabilities: dict[str, Any] = {}
        self.limits: dict[str, Any] = {}
        self.protocol_version: int | None = None
        self.shutting_down = False
        self.events: list[ServerEvent] = []  # last events, bounded (see _apply_event)
        self._core: ProtocolCore[T] = ProtocolCore(options.encoding)
        self._envs: weakref.WeakValueDictionary[str, EnvView] = weakref.WeakValueDictionary()
        self._connection_error: SandgymError | None = None  # connection-scoped error sent before a close
        self._closed_exc: ConnectionClosedError | None = None
        # Session resume (PROTOCOL.md §5a): the server's current token and grace period (seconds).
        self._resume_token: str | None = None
        self._resume_grace = 0.0
        #: Sessions a failed resume lost: calls on them fail with the error, without a round trip.
        self._lost_sessions: dict[str, SandgymError] = {}
        self._reconnect = options.reconnect
        #: Requests made while a resume runs (id -> encoded frame): they go out once it ends.
        self._outbox: dict[int, str | bytes] = {}
        #: The caller closed the client: no resume.
        self._user_closed = False
        self.scheduling = options.scheduling
        #: Groups made on this connection, by id, until their group_complete event (PROTOCOL.md §6a).
        self._groups: weakref.WeakValueDictionary[str, GroupView[Any]] = weakref.WeakValueDictionary()

    # ------------------------------------------------------------------ state

    @property
    def pending(self) -> int:
        """Number of requests awaiting a reply."""
        return self._core.pending_count

    @property
    def open_sessions(self) -> int:
        return sum(1 for e in list(self._envs.values()) if not e.closed)

    def _on_hello(self, hello: Mapping[str, Any]) -> None:
        self.protocol_version = hello.get("version")
        self.server_info = dict(hello.get("server") or {})
        self.capabilities = dict(hello.get("capabilities") or {})
        self.limits = dict(hello.get("limits") or {})
        mmb = self.limits.get("max_message_bytes")
        if isinstance(mmb, int) and mmb > 0:
            self._core.max_message_bytes = mmb
        token = hello.get("resume_token")
        grace = self.limits.get("resume_grace_ms")
        self._resume_token = token if isinstance(token, str) else None
        self._resume_grace = grace / 1000.0 if isinstance(grace, int) and grace > 0 else 0.0
        # Frames are kept for a re-send only where a resume can happen.
        self._core.keep_frames = self._supports_resume and self._reconnect and self._resume_token is not None

    # ------------------------------------------------------------------ resume (PROTOCOL.md §5a)
    # The decisions and bookkeeping of a resume, shared by both clients; each adds only its I/O (open a
    # socket, send the hello and resume calls, write the frames these return, its locking).

    def _may_resume_after(self, close_rcvd: Any, close_sent: Any) -> bool:
        """A drop worth resuming: offered by the server, not opted out or closed by us, and the socket
        ended without a close frame either way (a close from the server is it ending the session on purpose)."""
        return (
            self._resume_token is not None
            and self._resume_grace > 0
            and self._reconnect
            and not self._user_closed
            and self._closed_exc is None
            and self._connection_error is None
            and close_rcvd is None
            and close_sent is None
        )

    def _resume_begin(self) -> tuple[list[int], str, list[str]]:
        """What a resume starts from: the ids sent on the dropped socket and unanswered (what the server
        may owe us), the token to present, and the sessions at stake."""
        owed = [rid for rid in self._core.pending_ids() if rid not in self._outbox]
        token = self._resume_token
        assert token is not None
        return owed, token, [e.session for e in list(self._envs.values()) if not e.closed]

    def _still_owed(self, owed: list[int]) -> list[int]:
        """Of ``owed``, those still waiting (a call may have timed out during the reconnect)."""
        still = set(self._core.pending_ids())
        return [rid for rid in owed if rid in still]

    @staticmethod
    def _backoff(delay: float) -> tuple[float, float]:
        """The jittered wait before the next reconnect attempt, and the next (capped, doubled) delay."""
        return delay * (0.5 + random.random() / 2), min(delay * 2, 2.0)

    def _resume_expired(self, attempts: int, last: str, sessions: list[str]) -> ResumeExpiredError:
        reason = f"could not reconnect within the grace period of {self._resume_grace:g} s ({attempts} attempts; last: {last})"
        return ResumeExpiredError(f"cannot resume: {reason}", details={"reason": reason, "sessions": sessions})

    def _resumed_frames(self, res: Mapping[str, Any], attempts: int, seconds: float) -> list[str | bytes]:
        """The resume succeeded: the new token is kept, calls whose reply was lost fail with REPLY_LOST, and
        the frames to send now are returned, in order: requests the server never received (same ids),
        then those made meanwhile (the outbox, emptied)."""
        token = res.get("resume_token")
        self._resume_token = token if isinstance(token, str) else None
        lost = [int(r) for r in res.get("lost") or []]
        unseen = [int(r) for r in res.get("unseen") or []]
        for rid, type_, call in self._core.take(lost, reserve=True):
            self._finish(
                call,
                None,
                SandgymError(
                    f"{type_} request {rid} ran on the server but its reply was lost with the connection",
                    code="REPLY_LOST",
                    details={"id": rid, "type": type_},
                ),
            )
        frames = [d for d in (self._core.frame_of(r) for r in unseen) if d is not None]
        frames += list(self._outbox.values())
        self._outbox.clear()
        log.info(
            "sandgym: resumed %d session(s) after %.2f s (%d attempt(s); %d request(s) re-sent, %d lost)",
            len(res.get("sessions") or []),
            seconds,
            attempts,
            len(unseen),
            len(lost),
        )
        return frames

    def _resume_failed_frames(self, err: SandgymError, owed: list[int]) -> list[str | bytes]:
        """The sessions are gone: their pending calls and handles fail with ``err``, and so do calls made
        meanwhile that name a lost session. Returns the other calls made meanwhile, to send on the new
        connection (when it is open; the outbox is emptied either way)."""
        lost = self._mark_lost(err)
        for _rid, _type, call in self._core.take(owed, reserve=True):
            self._finish(call, None, err)
        log.warning("sandgym: %s; %d session(s) lost", err.message, len(lost))
        queued = dict(self._outbox)
        self._outbox.clear()
        send: list[str | bytes] = []
        for rid, data in queued.items():
            msg = codec.decode(data)
            session = msg.get("session") if isinstance(msg, dict) else None
            if isinstance(session, str) and session in self._lost_sessions:
                for _r, _t, call in self._core.take([rid], reserve=True):
                    self._finish(call, None, self._lost_sessions[session])
            elif self._closed_exc is None:
                send.append(data)
        return send

    def _mark_lost(self, err: SandgymError) -> list[str]:
        """A resume failed: every open handle's session is gone; calls on them fail with ``err``."""
        lost = [e.session for e in list(self._envs.values()) if not e.closed]
        for env in list(self._envs.values()):
            if not env.closed:
                self._lost_sessions[env.session] = err
                env._closed = True
                env.closed_reason = err.to_wire()
        return lost

    def _lost_error(self, op: Op) -> SandgymError | None:
        """The error of a call naming a session a failed resume lost."""
        if not self._lost_sessions or not op.params:
            return None
        session = op.params.get("session")
        return self._lost_sessions.get(session) if isinstance(session, str) else None

    def _register(self, env: E) -> E:
        """Track a new session's handle (server events and a lost connection mark it closed)."""
        self._envs[env.session] = env
        return env

    def _register_group(self, group: G) -> G:
        for env in group.envs:
            self._register(env)
        self._groups[group.id] = group
        return group

    def _make_op(
        self, env_id: str, kwargs: Mapping[str, Any], scheduling: Scheduling | None, on_queue: QueueCallback | None
    ) -> Op:
        return _core.make_op(env_id, kwargs, scheduling if scheduling is not None else self.scheduling, on_queue)

    def _group_op(
        self,
        env_id: str,
        size: int,
        kwargs: Mapping[str, Any],
        scheduling: Scheduling | None,
        on_queue: QueueCallback | None,
    ) -> Op:
        return _core.group_op(env_id, size, kwargs, scheduling if scheduling is not None else self.scheduling, on_queue)

    # ------------------------------------------------------------------ operations on handles

    def _batch_op(self, requests: Sequence[Mapping[str, Any]]) -> Op:
        """``batch`` items may name their session by handle (``"env": env`` or ``"session": env``)."""
        items: list[dict[str, Any]] = []
        for req in requests:
            item = dict(req)
            env = item.pop("env", None)
            if env is not None:
                item["session"] = env.session
            elif isinstance(item.get("session"), EnvView):
                item["session"] = item["session"].session
            items.append(item)
        return _core.batch_op(items)

    def _step_many_ops(self, envs: Sequence[EnvView], actions: Sequence[Any]) -> list[Op]:
        return _core.step_many_ops([e.session for e in envs], actions, int(self.limits.get("max_batch") or 64))

    # ------------------------------------------------------------------ incoming

    def _finish(self, token: T, result: Any, error: BaseException | None) -> None:
        raise NotImplementedError

    def _dispatch(self, incoming: Incoming[T]) -> ServerEvent | None:
        """Apply one received frame: complete the call it answers, or apply the event (returned, for
        the layer to hand to ``on_event``), or record the error a closing server sent."""
        if isinstance(incoming, Resolved):
            self._finish(incoming.token, incoming.result, None)
        elif isinstance(incoming, Rejected):
            self._finish(incoming.token, None, incoming.error)
        elif isinstance(incoming, ServerEvent):
            self._apply_event(incoming)
            return incoming
        elif isinstance(incoming, Unroutable):
            err = incoming.error
            if err.scope == "connection":  # sent right before the server closes
                self._connection_error = err
                log.info("sandgym: server error before close: %s", err)
            elif incoming.answers_unknown_call:
                # The server answered a call without its id: fail every pending call (one of them is
                # the one answered) instead of leaving that one waiting forever.
                tokens = self._core.fail_pending()
                log.warning("sandgym: server error with id null failed %d pending call(s): %s", len(tokens), err)
                for token in tokens:
                    self._finish(token, None, err)
            else:
                log.warning("sandgym: unroutable frame from server: %s", err)
        elif isinstance(incoming, Discarded):
            log.debug("sandgym: dropped late reply for timed-out request %d", incoming.id)
        return None

    def _apply_event(self, ev: ServerEvent) -> None:
        self.events.append(ev)
        if len(self.events) > _MAX_EVENTS:
            del self.events[: _MAX_EVENTS // 2]
        if ev.event == "session_closed" and ev.session is not None:
            env = self._envs.get(ev.session)
            if env is not None:
                env._closed = True
                env.closed_reason = ev.details
        elif ev.event == "shutdown":
            self.shutting_down = True
        elif ev.event == "group_complete":
            gid = ev.details.get("group")
            group = self._groups.pop(gid, None) if isinstance(gid, str) else None
            if group is not None:
                sessions = ev.details.get("sessions")
                group._set_complete([s for s in sessions if isinstance(s, str)] if isinstance(sessions, list) else [])

    def _call_on_event(self, ev: ServerEvent) -> Any:
        """Run the user's ``on_event``; returns what it returned (a coroutine, for the async layer)."""
        if self.on_event is None:
            return None
        try:
            return self.on_event(ev)
        except Exception:  # pragma: no cover - user callback
            log.exception("sandgym: on_event handler failed")
            return None

    def _run_watch(self, hit: tuple[QueueCallback, QueueProgress] | None) -> Any:
        """Run a request's ``on_queue`` callback for the event ``ProtocolCore.progress`` matched to it;
        returns what it returned (a coroutine, for the async layer)."""
        if hit is None:
            return None
        fn, progress = hit
        try:
            return fn(progress)
        except Exception:  # pragma: no cover - user callback
            log.exception("sandgym: on_queue callback failed")
            return None

    # ------------------------------------------------------------------ failures

    def _fail_all(self, exc: ConnectionClosedError | None) -> None:
        """The connection is gone: every pending call fails at once with ``exc`` (by default the
        close code, reason and the error the server sent before closing), every handle is closed."""
        if self._closed_exc is not None:
            return
        if exc is None:
            exc = self._close_error()
        self._closed_exc = exc
        for token in self._core.connection_lost(exc):
            self._finish(token, None, exc)
        for env in list(self._envs.values()):
            env._closed = True
        for group in list(self._groups.values()):
            group._set_lost(exc)
        self._groups.clear()

    def _close_error(self) -> ConnectionClosedError:
        code, reason = _ws_close_info(self._ws)
        cause = self._connection_error
        msg = f"connection to {self.url or 'server'} closed"
        if code is not None:
            msg += f" (code {code}{': ' + reason if reason else ''})"
        if cause is not None:
            msg += f" after {cause.code}: {cause.message}"
        return ConnectionClosedError(msg, close_code=code, close_reason=reason, cause_error=cause)

    @staticmethod
    def _timeout_error(rid: int | None, type_: str, timeout: float | None) -> RequestTimeoutError:
        return RequestTimeoutError(
            f"{type_} request {rid} got no reply within {timeout:g} s",
            details={"id": rid, "type": type_, "timeout_s": timeout},
        )

    def _retry_delay(self, exc: SandgymError, attempt: int) -> float | None:
        """Seconds to sleep before retrying a request refused with ``exc`` after ``attempt`` tries,
        or None to raise it (not CAPACITY, retries off, or attempts used up)."""
        if exc.code != "CAPACITY" or not self.retry_capacity or attempt >= self.capacity_max_attempts:
            return None
        return self._capacity_delay(exc, attempt)

    def _capacity_delay(self, exc: SandgymError, attempt: int) -> float:
        return capacity_delay(exc, attempt, self.capacity_max_delay)


def handshake_error(exc: BaseException) -> BaseException | None:
    """The error to raise instead of ``exc`` when ``hello`` failed: the server's own error (e.g.
    UNAUTHORIZED) when it sent one before closing, else None (re-raise ``exc``)."""
    if isinstance(exc, ConnectionClosedError) and exc.cause_error is not None:
        return exc.cause_error
    return None


def _ws_close_info(ws: Any) -> tuple[int | None, str]:
    proto = getattr(ws, "protocol", None)
    for frame in (getattr(proto, "close_rcvd", None), getattr(proto, "close_sent", None)):
        if frame is not None:
            return frame.code, frame.reason
    return None, ""


class EnvView:
    """The spec-derived, I/O-free part of an env handle (``AsyncEnv`` and ``Env`` add the calls)."""

    def __init__(self, client: Any, session: str, spec: Mapping[str, Any]) -> None:
        self.client = client
        self.session = session
        self.spec: dict[str, Any] = dict(spec)
        self._closed = False
        #: details of the server's ``session_closed`` event, when the server closed this session
        self.closed_reason: dict[str, Any] | None = None

    @property
    def env_id(self) -> str:
        return str(self.spec.get("id", ""))

    @property
    def observation_space(self) -> dict[str, Any]:
        """The protocol observation space (a dict); see :mod:`sandgym.spaces` to convert it."""
        return dict(self.spec.get("observation_space") or {})

    @property
    def action_space(self) -> dict[str, Any]:
        return dict(self.spec.get("action_space") or {})

    @property
    def tools(self) -> list[dict[str, Any]] | None:
        tools = self.spec.get("tools")
        if tools is None and self.action_space.get("type") == "tool_call":
            tools = self.action_space.get("tools")
        return list(tools) if tools is not None else None

    @property
    def closed(self) -> bool:
        return self._closed

    def _close_op(self) -> Op | None:
        """Mark the handle closed; the ``close`` op to send, or None when there is nothing to send
        (closed already, or the connection is gone and took the session with it)."""
        if self._closed:
            return None
        self._closed = True
        if self.client._closed_exc is not None:
            return None
        return _core.close_op(self.session)

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"<{type(self).__name__} {self.env_id} session={self.session} {state}>"


class GroupView(Generic[E]):
    """A group of sessions admitted as one unit (PROTOCOL.md §6a), the I/O-free part: its ``id``, its
    member handles ``envs`` (in order), whether the server reported it complete (``group_complete``:
    every member closed, its sandboxes free). ``AsyncEnvGroup`` and ``EnvGroup`` add the waiting."""

    def __init__(self, client: Any, group_id: str, envs: Sequence[E], env_spec: Mapping[str, Any]) -> None:
        self.client = client
        self.id = group_id
        self.envs: list[E] = list(envs)
        self.env_spec: dict[str, Any] = dict(env_spec)
        self.complete = False
        #: the sessions the server's group_complete event named
        self.completed_sessions: list[str] = []
        self._lost: ConnectionClosedError | None = None

    @property
    def sessions(self) -> list[str]:
        return [e.session for e in self.envs]

    def __len__(self) -> int:
        return len(self.envs)

    def __iter__(self) -> Any:
        return iter(self.envs)

    def __getitem__(self, i: int) -> E:
        return self.envs[i]

    def _set_complete(self, sessions: list[str]) -> None:
        self.complete = True
        self.completed_sessions = sessions
        self._wake()

    def _set_lost(self, exc: ConnectionClosedError) -> None:
        if not self.complete:
            self._lost = exc
            self._wake()

    def _wake(self) -> None:
        """The layer's hook: wake whoever waits for completion."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.id} {len(self.envs)} sessions{' complete' if self.complete else ''}>"


G = TypeVar("G", bound=GroupView[Any])


def capacity_delay(exc: SandgymError, attempt: int, max_delay: float) -> float:
    """Seconds to wait before retrying a CAPACITY refusal: the server's ``retry_after_ms`` hint
    when it gave one, else exponential backoff; capped, with jitter."""
    hinted = exc.details.get("retry_after_ms")
    if isinstance(hinted, (int, float)) and not isinstance(hinted, bool) and hinted >= 0:
        base = hinted / 1000.0
    else:
        base = min(max_delay, 0.05 * 2 ** (attempt - 1))
    # jitter so that many callers rejected together do not return together
    return min(max_delay, base * (1.0 + 0.25 * random.random()))


def connect_options(
    token: str | None, connect_timeout: float | None, max_size: int | None, client_name: str, client_version: str
) -> dict[str, Any]:
    """The websockets ``connect`` options both layers use (auth header, no compression, user agent)."""
    return {
        "additional_headers": {"Authorization": f"Bearer {token}"} if token else None,
        "open_timeout": connect_timeout,
        "max_size": max_size,
        "compression": None,
        "user_agent_header": f"{client_name}/{client_version} sandgym-python/{__version__}",
    }


def connect_error(exc: BaseException, url: str) -> SandgymError:
    """Map a failed WebSocket opening handshake to the error the caller sees: an HTTP 401/403 is
    UNAUTHORIZED, anything else a ConnectionClosedError naming the URL."""
    import websockets

    from .errors import ERROR_CLASSES

    if isinstance(exc, websockets.exceptions.InvalidStatus):
        status = exc.response.status_code
        if status in (401, 403):
            cls_ = ERROR_CLASSES.get("UNAUTHORIZED", SandgymError)
            return cls_(f"server refused the connection: HTTP {status}", code="UNAUTHORIZED")
        return ConnectionClosedError(f"cannot connect to {url}: HTTP {status}")
    return ConnectionClosedError(f"cannot connect to {url}: {exc}")
