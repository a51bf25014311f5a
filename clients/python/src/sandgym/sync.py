"""Blocking client with the same names as the asyncio one.

:class:`Client` speaks the protocol over ``websockets.sync`` on top of the sans-I/O core
(:mod:`sandgym._core`). It uses no asyncio at all, so it behaves the same in a plain script, in a thread
pool and inside a running event loop (a Jupyter notebook).

Reading follows a leader/follower discipline instead of a reader thread: a thread waiting for its reply
becomes the *reader* when nobody else is reading, receives frames itself and routes the other threads'
replies to them (each waiting thread sleeps on its own condition over the client lock) until its own
reply arrives; then it hands the reader role to one of the threads still waiting. A single-threaded
caller therefore sends, receives and decodes on its own thread: no handoff between our threads on the
per-step path. Replies are routed only by request id, so a timed-out call (the reader gives up via the
receive timeout; a follower via its condition wait) can never hand its late reply to a later call: the
id stays reserved until that reply arrives and is dropped.

Server events (``session_closed``, ``shutdown``) and a dropped connection are noticed whenever a thread
reads: during any call, or explicitly with :meth:`Client.poll`.

Session resume (PROTOCOL.md §5a): the thread that reads when the socket drops (without a close frame,
on a server that offers resume) reconnects with capped, jittered backoff within the grace period and
resumes, as the asyncio client does; calls made meanwhile wait and go out after it. ``reconnect=False``
opts out.

This module is only that I/O; what each operation sends and how its reply is read live in
:mod:`sandgym._core`, the connection's state in :mod:`sandgym._base` (shared with the asyncio client).
"""

from __future__ import annotations

import inspect
import logging
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

import websockets
from websockets.protocol import State
from websockets.sync.client import ClientConnection, connect as ws_sync_connect

from . import _core, codec
from ._base import (
    UNSET,
    ClientBase,
    ConnectOptions,
    EnvView,
    GroupView,
    QueueCallback,
    connect_error,
    handshake_error,
)
from ._core import Op, QueueProgress, Scheduling, StepResult
from .errors import (
    ConnectionClosedError,
    RequestTimeoutError,
    ResumeExpiredError,
    ResumeRefusedError,
    SandgymError,
    UnauthorizedError,
)

__all__ = ["Client", "Env", "EnvGroup"]

log = logging.getLogger("sandgym")

_CONNECT_PARAMS = inspect.signature(ws_sync_connect).parameters
# websockets >= 17.1 warns unless connect() is used as a context manager or legacy=True is passed.
_LEGACY_KW: dict[str, Any] = {"legacy": True} if "legacy" in _CONNECT_PARAMS else {}
# Frames are read only while a call waits; with the default high-water mark (16 frames) unread events
# would pause the socket reader and starve keepalive pongs, so never pause (frames between calls are
# events and late replies, bounded by the number of sessions).
_QUEUE_KW: dict[str, Any] = {"max_queue": None} if "max_queue" in _CONNECT_PARAMS else {}


class _Call:
    """One pending request (the core's token). ``cond`` is created only when the caller has to wait
    while another thread reads; the thread that reads never needs one."""

    __slots__ = ("cond", "done", "error", "result")

    def __init__(self) -> None:
        self.done = False
        self.result: Any = None
        self.error: BaseException | None = None
        self.cond: threading.Condition | None = None


class Client(ClientBase[_Call]):
    """Blocking sandgym client (same methods as :class:`AsyncClient`, without ``await``).

    ``Client(url, ...)`` or ``Client.connect(url, ...)`` connect and perform ``hello`` immediately; the
    keyword options are those of :meth:`AsyncClient.connect` (:class:`sandgym._base.ConnectOptions`). Thread-safe: several threads may share one
    client; their requests are multiplexed on the connection and each gets its own reply.
    """

    _supports_resume = True

    def __init__(self, url: str, **options: Any) -> None:
        opts = ConnectOptions(**options)
        super().__init__(url, opts)
        self._options = opts
        # Resume state, guarded by _lock: while _resuming, requests wait in the outbox.
        self._resuming = False
        # Leader/follower state, all guarded by _lock.
        self._lock = threading.Lock()
        self._reading = False  # a thread is receiving frames
        self._reader_ident: int | None = None
        self._followers: dict[_Call, None] = {}  # calls whose threads wait on their condition (ordered)
        self._close_waiters: list[_Call] = []  # wait_closed() calls, completed by _fail_all

        try:
            self._ws: ClientConnection = ws_sync_connect(url, **opts.ws_options(), **_QUEUE_KW, **_LEGACY_KW)
        except (OSError, TimeoutError, websockets.exceptions.WebSocketException) as exc:
            raise connect_error(exc, url) from exc
        try:
            self._on_hello(self._call(opts.hello_op(), opts.connect_timeout))
        except BaseException as exc:
            self.close()
            cause = handshake_error(exc)
            if cause is None:
                raise
            raise cause from exc

    @classmethod
    def connect(cls, url: str, **kwargs: Any) -> Client:
        return cls(url, **kwargs)

    # ------------------------------------------------------------------ lifecycle

    def close(self) -> None:
        """Close the connection (sessions on it are closed by the server). Idempotent.

        Replies already received for other threads' calls are still delivered; calls still pending
        then fail with :class:`ConnectionClosedError`."""
        self._user_closed = True
        try:
            self._ws.close()
        except Exception:  # noqa: BLE001  # pragma: no cover - closing a broken socket
            pass
        if self._closed_exc is None:
            try:
                self.wait_closed(timeout=5.0)
            except RuntimeError:  # close() from an on_event handler: the reader finishes the job
                pass
        with self._lock:
            self._fail_all(None)

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def closed(self) -> bool:
        if self._closed_exc is None and self._ws.protocol.state is State.CLOSED:
            self.poll()  # the socket is gone: deliver what it left behind, then record the close
        return self._closed_exc is not None

    @property
    def open_sessions(self) -> int:
        self.poll()  # account for session_closed events that arrived between calls
        return super().open_sessions

    def wait_closed(self, timeout: float | None = None) -> ConnectionClosedError | None:
        """Wait until the connection is gone (reading frames meanwhile); returns the error pending
        calls failed with, or None when ``timeout`` expired first."""
        call = _Call()
        with self._lock:
            if self._closed_exc is not None:
                return self._closed_exc
            self._close_waiters.append(call)
        try:
            self._wait(call, None, "wait_closed", timeout)
        except RequestTimeoutError:
            return None
        finally:
            with self._lock:
                if call in self._close_waiters:
                    self._close_waiters.remove(call)
        return self._closed_exc

    def poll(self, timeout: float = 0.0) -> int:
        """Process frames that arrived while no call was waiting (server events, late replies, the
        close), for up to ``timeout`` seconds; returns how many were processed. Calls do this
        themselves; ``poll`` is for noticing events while idle. A no-op while another thread reads."""
        with self._lock:
            if self._reading or self._closed_exc is not None:
                return 0
            self._take_reader()
        n = 0
        try:
            deadline = time.monotonic() + timeout
            while True:
                remaining = max(0.0, deadline - time.monotonic())
                if not self._read_one(remaining):
                    break
                n += 1
        finally:
            with self._lock:
                self._release_reader()
        return n

    # ------------------------------------------------------------------ reading (leader/follower)

    def _take_reader(self) -> None:  # with _lock held
        self._reading = True
        self._reader_ident = threading.get_ident()

    def _release_reader(self) -> None:  # with _lock held
        self._reading = False
        self._reader_ident = None
        self._promote()

    def _promote(self) -> None:
        """Nobody reads: wake one waiting thread so that it becomes the reader (with _lock held)."""
        if self._reading:
            return
        for call in self._followers:
            if not call.done and call.cond is not None:
                call.cond.notify()
                return

    def _read_one(self, timeout: float | None) -> bool:
        """Receive and route one frame as the reader (without _lock). False when ``timeout`` expired
        or the connection is gone (then every pending call has failed, unless it was resumed)."""
        ws = self._ws
        try:
            data = ws.recv(timeout)
        except TimeoutError:
            return False
        except websockets.exceptions.ConnectionClosed:
            with self._lock:
                if ws is not self._ws:
                    return True  # replaced by a reconnect meanwhile: read the new one
                if self._resuming:
                    return False  # a resume attempt's socket: the attempt fails, the loop goes on
                resume = self._may_resume(ws)
                if resume:
                    self._resuming = True
                else:
                    self._fail_all(None)
            return self._resume() if resume else False
        except Exception as exc:  # pragma: no cover - defensive: never leave callers hanging
            log.exception("sandgym: reading from the connection failed")
            with self._lock:
                self._fail_all(ConnectionClosedError(f"client reader failed: {exc!r}"))
            return False
        # Decode outside the lock: other threads keep sending meanwhile.
        try:
            msg = codec.decode(data)
        except codec.DecodeError as exc:
            log.warning("sandgym: undecodable frame from server: %s", exc)
            return True
        hit: tuple[QueueCallback, QueueProgress] | None = None
        with self._lock:
            event = self._dispatch(self._core.receive_message(msg))
            if event is not None:
                hit = self._core.progress(event)
        if event is not None:
            self._call_on_event(event)  # outside the lock: the handler may take its time
            self._run_watch(hit)
        return True

    # ------------------------------------------------------------------ resume (PROTOCOL.md §5a)

    def _may_resume(self, ws: ClientConnection) -> bool:  # with _lock held
        return self._may_resume_after(ws.protocol.close_rcvd, ws.protocol.close_sent)

    def _direct(self, op: Op, deadline: float) -> Any:
        """A call of the reconnect itself, sent and read by this (the reader) thread."""
        call = _Call()
        with self._lock:
            rid, data = self._core.request(op.type, op.params, call)
        ws = self._ws
        try:
            ws.send(data)
            while not call.done:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise self._timeout_error(rid, op.type, left)
                if not self._read_one(left) and not call.done and ws.protocol.state is State.CLOSED:
                    raise ConnectionClosedError("connection closed during a resume attempt")
        except BaseException:
            with self._lock:
                self._core.abandon(rid)
            raise
        if call.error is not None:
            raise call.error
        return op.parse(call.result)

    def _resume(self) -> bool:
        """Reconnect and resume as the reader thread. True when resumed (keep reading)."""
        t0 = time.monotonic()
        deadline = t0 + self._resume_grace
        with self._lock:
            owed, old_token, sessions = self._resume_begin()
        log.warning(
            "sandgym: connection to %s lost; reconnecting to resume %d session(s) within %.1f s",
            self.url,
            len(sessions),
            self._resume_grace,
        )
        attempt, delay, last = 0, 0.1, "the connection dropped"
        while not self._user_closed:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            attempt += 1
            timeout = max(0.001, min(left, self._options.connect_timeout))
            try:
                opts = {**self._options.ws_options(), "open_timeout": timeout}
                ws = ws_sync_connect(self.url, **opts, **_QUEUE_KW, **_LEGACY_KW)
            except (OSError, TimeoutError, websockets.exceptions.WebSocketException) as exc:
                last = f"{type(exc).__name__}: {exc}"
            else:
                with self._lock:
                    self._ws = ws
                try:
                    attempt_deadline = time.monotonic() + timeout
                    self._on_hello(self._direct(self._options.hello_op(), attempt_deadline))
                    with self._lock:
                        owed_now = self._still_owed(owed)
                    res = self._direct(_core.resume_op(old_token, owed_now), attempt_deadline)
                except (ResumeExpiredError, ResumeRefusedError, UnauthorizedError) as exc:
                    self._resume_failed(exc, owed)
                    return True
                except (ConnectionClosedError, RequestTimeoutError, OSError) as exc:
                    last = f"{type(exc).__name__}: {exc}"
                    ws.close()
                except SandgymError as exc:
                    # Any other answer (an error §5a does not give, a malformed result): the sessions
                    # cannot be taken back. Failing them with it beats an exception out of the reader
                    # that leaves the waiting calls hanging (tests/test_resume_attacks.py).
                    self._resume_failed(exc, owed)
                    return True
                else:
                    self._resumed(res, attempt, time.monotonic() - t0)
                    return True
            wait, delay = self._backoff(delay)
            wait = min(wait, deadline - time.monotonic())
            if wait > 0:
                time.sleep(wait)
        expired = self._resume_expired(attempt, last, sessions)
        self._resume_failed(expired, owed)
        with self._lock:
            self._fail_all(
                ConnectionClosedError(
                    f"connection to {self.url} lost: {expired.details['reason']}", cause_error=expired
                )
            )
        return False

    def _resumed(self, res: Mapping[str, Any], attempts: int, seconds: float) -> None:
        with self._lock:
            frames = self._resumed_frames(res, attempts, seconds)
            self._resuming = False
            for data in frames:  # under the lock: no new request can overtake them
                try:
                    self._ws.send(data)
                except websockets.exceptions.ConnectionClosed:
                    break  # the next read sees the drop and resumes again

    def _resume_failed(self, err: SandgymError, owed: list[int]) -> None:
        """The sessions are gone: their pending calls and handles fail with ``err``."""
        with self._lock:
            self._resuming = False
            for data in self._resume_failed_frames(err, owed):
                if self._ws.protocol.state is not State.OPEN:
                    continue
                try:
                    self._ws.send(data)
                except websockets.exceptions.ConnectionClosed:
                    break

    def _finish(self, call: _Call, result: Any, error: BaseException | None) -> None:  # with _lock held
        if call.done:
            return
        call.result, call.error, call.done = result, error, True
        if call.cond is not None:
            call.cond.notify()

    def _fail_all(self, exc: ConnectionClosedError | None) -> None:  # with _lock held
        # Every waiting thread is woken now, whichever of them was reading.
        if self._closed_exc is None:
            super()._fail_all(exc)
            for call in self._close_waiters:
                self._finish(call, None, None)

    def _wait(self, call: _Call, rid: int | None, type_: str, timeout: float | None) -> Any:
        """Block until ``call`` is done: read frames while nobody else does, else sleep until the
        reader hands over the reply (or the reader role)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        lock = self._lock
        lock.acquire()
        try:
            while not call.done:
                if self._reading:
                    if self._reader_ident == threading.get_ident():
                        raise RuntimeError(
                            "sandgym.Client called from its own on_event handler; do the call after "
                            "the handler returns (e.g. hand it to another thread)"
                        )
                    remaining = None if deadline is None else deadline - time.monotonic()
                    if remaining is not None and remaining <= 0:
                        break
                    if call.cond is None:
                        call.cond = threading.Condition(lock)
                    self._followers[call] = None
                    try:
                        call.cond.wait(remaining)
                    finally:
                        del self._followers[call]
                    continue
                # Nobody reads: this thread becomes the reader until its own reply arrives.
                self._take_reader()
                lock.release()
                try:
                    while not call.done:
                        remaining = None if deadline is None else deadline - time.monotonic()
                        if remaining is not None and remaining <= 0:
                            break
                        if not self._read_one(remaining) and self._closed_exc is None:
                            break  # own deadline
                finally:
                    lock.acquire()
                    self._release_reader()
                break
            if not call.done:
                if rid is not None:
                    self._core.abandon(rid)  # the late reply will be dropped by id
                self._promote()
                raise self._timeout_error(rid, type_, timeout)
        except BaseException:
            # Timeout, KeyboardInterrupt while waiting, ...: the caller stops waiting for this id.
            if not call.done and rid is not None:
                self._core.abandon(rid)
            if not self._reading:
                self._promote()
            raise
        finally:
            lock.release()
        if call.error is not None:
            raise call.error
        return call.result

    # ------------------------------------------------------------------ requests

    def request(self, type_: str, params: dict[str, Any] | None = None, *, timeout: float | None = UNSET) -> Any:
        """Send one raw request and return its ``result`` (raises the mapped error otherwise).

        CAPACITY errors are retried when the client was created with ``retry_capacity=True``.
        """
        return self._call(Op(type_, params), timeout)

    def _call(self, op: Op, timeout: float | None = UNSET) -> Any:
        """Carry one operation to the server and its result back (CAPACITY retried when enabled)."""
        lost = self._lost_error(op)
        if lost is not None:
            raise lost
        attempt = 1
        while True:
            try:
                return op.parse(self._request_once(op.type, op.params, timeout, op.watch))
            except SandgymError as exc:
                delay = self._retry_delay(exc, attempt)
                if delay is None:
                    raise
            time.sleep(delay)
            attempt += 1

    def _request_once(
        self, type_: str, params: dict[str, Any] | None, timeout: Any, watch: QueueCallback | None = None
    ) -> Any:
        call = _Call()
        with self._lock:
            if self._closed_exc is not None:
                raise self._closed_exc
            if self._reading and self._reader_ident == threading.get_ident():
                raise RuntimeError(
                    "sandgym.Client called from its own on_event handler; do the call after the "
                    "handler returns (e.g. hand it to another thread)"
                )
            rid, data = self._core.request(type_, params, call, watch)
            queued = self._resuming
            if queued:
                self._outbox[rid] = data  # goes out after the resume
        try:
            if not queued:
                self._ws.send(data)
        except websockets.exceptions.ConnectionClosed:
            with self._lock:
                resumable = self._resuming or self._may_resume(self._ws)
                if resumable:
                    self._outbox[rid] = data  # never written: it goes out after the resume
                else:
                    self._core.cancel(rid)
            if not resumable:
                self.wait_closed(timeout=5.0)  # deliver what was received, record the close and its cause
                raise self._closed_exc or ConnectionClosedError("connection closed") from None
        except BaseException:
            with self._lock:
                self._core.cancel(rid)
            raise
        if timeout is UNSET:
            timeout = self.timeout
        return self._wait(call, rid, type_, timeout)

    # ------------------------------------------------------------------ operations (see _core)

    def ping(self, *, timeout: float | None = UNSET) -> float:
        """Round trip to the server; returns the measured seconds."""
        return self._call(_core.ping_op(), timeout)  # type: ignore[no-any-return]

    def list_envs(self) -> list[dict[str, Any]]:
        """The env specs the server offers (``env_spec`` dicts, see the protocol)."""
        return self._call(_core.list_envs_op())  # type: ignore[no-any-return]

    def make(
        self,
        env_id: str,
        *,
        scheduling: Scheduling | None = None,
        on_queue: QueueCallback | None = None,
        timeout: float | None = UNSET,
        **kwargs: Any,
    ) -> Env:
        """Create a session of ``env_id`` with env ``kwargs``; returns an :class:`Env`. ``scheduling``,
        ``on_queue`` and ``timeout`` as for :meth:`AsyncClient.make` (``on_queue`` runs on the thread
        that reads, and must not call the client)."""
        op = self._make_op(env_id, kwargs, scheduling, on_queue)
        return self._register(Env(self, *self._call(op, timeout)))

    def group(
        self,
        env_id: str,
        size: int,
        *,
        scheduling: Scheduling | None = None,
        on_queue: QueueCallback | None = None,
        timeout: float | None = UNSET,
        **kwargs: Any,
    ) -> EnvGroup:
        """``size`` sessions admitted as one unit; see :meth:`AsyncClient.group`. Returns an :class:`EnvGroup`."""
        op = self._group_op(env_id, size, kwargs, scheduling, on_queue)
        gid, sessions, spec = self._call(op, timeout)
        return self._register_group(EnvGroup(self, gid, [Env(self, s, spec) for s in sessions], spec))

    def batch(self, requests: Sequence[Mapping[str, Any]]) -> list[Any]:
        """Several reset/step/close items in one frame; see :meth:`AsyncClient.batch`. Returns one
        entry per item: its result dict or the :class:`SandgymError` instance (not raised)."""
        return self._call(self._batch_op(requests))  # type: ignore[no-any-return]

    def step_many(self, envs: Sequence[Env], actions: Sequence[Any]) -> list[StepResult | SandgymError]:
        """Step several sessions in one ``batch`` frame (chunked by the server's ``max_batch``)."""
        return [r for op in self._step_many_ops(envs, actions) for r in self._call(op)]


class Env(EnvView):
    """One session on a :class:`Client` (blocking ``reset`` / ``step`` / ``close``)."""

    client: Client

    def reset(
        self,
        *,
        seed: int | None = None,
        options: dict[str, Any] | None = None,
        timeout: float | None = UNSET,
        scheduling: Scheduling | None = None,
        on_queue: QueueCallback | None = None,
    ) -> tuple[Any, dict[str, Any]]:
        """Start an episode; returns ``(observation, info)``. ``timeout`` overrides the client's;
        ``scheduling`` and ``on_queue`` as for :meth:`AsyncEnv.reset`."""
        op = _core.reset_op(self.session, seed, options, scheduling, on_queue)
        return self.client._call(op, timeout)  # type: ignore[no-any-return]

    def step(self, action: Any, *, timeout: float | None = UNSET) -> StepResult:
        """Returns ``(observation, reward, terminated, truncated, info)``."""
        return self.client._call(_core.step_op(self.session, action), timeout)  # type: ignore[no-any-return]

    def close(self) -> None:
        """Close the session (idempotent; a no-op once the connection is gone)."""
        op = self._close_op()
        if op is not None:
            try:
                self.client._call(op)
            except ConnectionClosedError:
                pass

    def __enter__(self) -> Env:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class EnvGroup(GroupView[Env]):
    """Sessions admitted as one unit (:meth:`Client.group`); ``with`` closes them all."""

    def wait_complete(self, timeout: float | None = None) -> list[str]:
        """Read events until the server's ``group_complete`` (every member closed); returns the
        sessions it named. Raises :class:`ConnectionClosedError` when the connection went first,
        :class:`RequestTimeoutError` after ``timeout`` seconds."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self.complete and self._lost is None:
            left = 1.0 if deadline is None else deadline - time.monotonic()
            if left <= 0:
                raise RequestTimeoutError(
                    f"group {self.id} not complete within {timeout:g} s",
                    details={"group": self.id, "timeout_s": timeout},
                )
            if self.client.closed:
                break
            if self.client.poll(min(left, 1.0)) == 0 and self.client._reading:
                time.sleep(0.01)  # another thread reads (and will see the event)
        if not self.complete:
            raise self._lost or ConnectionClosedError("connection closed before the group completed")
        return self.completed_sessions

    def close(self) -> None:
        """Close every member (idempotent)."""
        for env in self.envs:
            env.close()

    def __enter__(self) -> EnvGroup:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
