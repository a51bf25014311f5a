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
"""

from __future__ import annotations

import inspect
import logging
import threading
import time
import weakref
from typing import Any, Mapping, Sequence

import websockets
from websockets.protocol import State
from websockets.sync.client import ClientConnection, connect as ws_sync_connect

from . import _core, codec
from ._core import Discarded, ProtocolCore, Rejected, Resolved, ServerEvent, Unroutable
from ._version import __version__
from .client import _UNSET, DEFAULT_TIMEOUT, EventHandler, StepResult, _step_tuple, _ws_close_info
from ._shared import EnvView, capacity_delay, connect_error, connect_options
from .errors import ConnectionClosedError, RequestTimeoutError, SandgymError

__all__ = ["Client", "Env"]

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

    __slots__ = ("done", "result", "error", "cond")

    def __init__(self) -> None:
        self.done = False
        self.result: Any = None
        self.error: BaseException | None = None
        self.cond: threading.Condition | None = None


class Client:
    """Blocking sandgym client (same methods as :class:`AsyncClient`, without ``await``).

    ``Client(url, ...)`` or ``Client.connect(url, ...)`` connect and perform ``hello`` immediately; the
    parameters are those of :meth:`AsyncClient.connect`. Thread-safe: several threads may share one
    client; their requests are multiplexed on the connection and each gets its own reply.
    """

    def __init__(
        self,
        url: str,
        *,
        token: str | None = None,
        encoding: str = "json",
        client_name: str = "sandgym-python",
        client_version: str = __version__,
        timeout: float | None = DEFAULT_TIMEOUT,
        connect_timeout: float = 10.0,
        retry_capacity: bool = False,
        capacity_max_attempts: int = 8,
        capacity_max_delay: float = 10.0,
        on_event: EventHandler | None = None,
        max_size: int | None = 256 * 1024 * 1024,
    ) -> None:
        if encoding not in ("json", "msgpack"):
            raise ValueError(f"unknown encoding {encoding!r} (use 'json' or 'msgpack')")
        self.url = url
        self.encoding = encoding
        self.timeout = timeout
        self.retry_capacity = retry_capacity
        self.capacity_max_attempts = max(1, capacity_max_attempts)
        self.capacity_max_delay = capacity_max_delay
        self.on_event = on_event
        self.server_info: dict[str, Any] = {}
        self.capabilities: dict[str, Any] = {}
        self.limits: dict[str, Any] = {}
        self.protocol_version: int | None = None
        self.shutting_down = False
        self.events: list[ServerEvent] = []  # last events, bounded (see _apply_event)
        self._core: ProtocolCore[_Call] = ProtocolCore(encoding)
        self._envs: weakref.WeakValueDictionary[str, Env] = weakref.WeakValueDictionary()
        self._connection_error: SandgymError | None = None
        self._closed_exc: ConnectionClosedError | None = None
        # Leader/follower state, all guarded by _lock.
        self._lock = threading.Lock()
        self._reading = False  # a thread is receiving frames
        self._reader_ident: int | None = None
        self._followers: dict[_Call, None] = {}  # calls whose threads wait on their condition (ordered)
        self._close_waiters: list[_Call] = []  # wait_closed() calls, completed by _fail_all

        try:
            self._ws: ClientConnection = ws_sync_connect(
                url, **connect_options(token, connect_timeout, max_size, client_name, client_version), **_QUEUE_KW, **_LEGACY_KW
            )
        except (OSError, TimeoutError, websockets.exceptions.WebSocketException) as exc:
            raise connect_error(exc, url) from exc
        try:
            hello = self.request(
                "hello",
                _core.hello_params(client_name=client_name, client_version=client_version, token=token),
                timeout=connect_timeout,
            )
        except ConnectionClosedError as exc:
            self.close()
            if exc.cause_error is not None:  # e.g. UNAUTHORIZED sent before the close
                raise exc.cause_error from exc
            raise
        except BaseException:
            self.close()
            raise
        self._on_hello(hello)

    @classmethod
    def connect(cls, url: str, **kwargs: Any) -> "Client":
        return cls(url, **kwargs)

    def _on_hello(self, hello: Mapping[str, Any]) -> None:
        self.protocol_version = hello.get("version")
        self.server_info = dict(hello.get("server") or {})
        self.capabilities = dict(hello.get("capabilities") or {})
        self.limits = dict(hello.get("limits") or {})
        mmb = self.limits.get("max_message_bytes")
        if isinstance(mmb, int) and mmb > 0:
            self._core.max_message_bytes = mmb

    # ------------------------------------------------------------------ lifecycle

    def close(self) -> None:
        """Close the connection (sessions on it are closed by the server). Idempotent.

        Replies already received for other threads' calls are still delivered; calls still pending
        then fail with :class:`ConnectionClosedError`."""
        try:
            self._ws.close()
        except Exception:  # pragma: no cover - closing a broken socket
            pass
        if self._closed_exc is None:
            try:
                self.wait_closed(timeout=5.0)
            except RuntimeError:  # close() from an on_event handler: the reader finishes the job
                pass
        with self._lock:
            self._fail_all(None)

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def closed(self) -> bool:
        if self._closed_exc is None and self._ws.protocol.state is State.CLOSED:
            self.poll()  # the socket is gone: deliver what it left behind, then record the close
        return self._closed_exc is not None

    @property
    def pending(self) -> int:
        """Number of requests awaiting a reply."""
        return self._core.pending_count

    @property
    def open_sessions(self) -> int:
        self.poll()  # account for session_closed events that arrived between calls
        return sum(1 for e in list(self._envs.values()) if not e.closed)

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
        or the connection is gone (then every pending call has failed)."""
        try:
            data = self._ws.recv(timeout)
        except TimeoutError:
            return False
        except websockets.exceptions.ConnectionClosed:
            with self._lock:
                self._fail_all(None)
            return False
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
        event: ServerEvent | None = None
        with self._lock:
            incoming = self._core.receive_message(msg)
            if isinstance(incoming, Resolved):
                self._finish(incoming.token, incoming.result, None)
            elif isinstance(incoming, Rejected):
                self._finish(incoming.token, None, incoming.error)
            elif isinstance(incoming, ServerEvent):
                self._apply_event(incoming)
                event = incoming
            elif isinstance(incoming, Unroutable):
                err = incoming.error
                if err.scope == "connection":  # sent right before the server closes
                    self._connection_error = err
                    log.info("sandgym: server error before close: %s", err)
                else:
                    log.warning("sandgym: unroutable frame from server: %s", err)
            elif isinstance(incoming, Discarded):
                log.debug("sandgym: dropped late reply for timed-out request %d", incoming.id)
        if event is not None and self.on_event is not None:
            try:
                self.on_event(event)
            except Exception:  # pragma: no cover - user callback
                log.exception("sandgym: on_event handler failed")
        return True

    @staticmethod
    def _finish(call: _Call, result: Any, error: BaseException | None) -> None:  # with _lock held
        if call.done:
            return
        call.result, call.error, call.done = result, error, True
        if call.cond is not None:
            call.cond.notify()

    def _fail_all(self, exc: ConnectionClosedError | None) -> None:  # with _lock held
        if self._closed_exc is not None:
            return
        if exc is None:
            code, reason = _ws_close_info(self._ws)  # type: ignore[arg-type]
            cause = self._connection_error
            msg = f"connection to {self.url or 'server'} closed"
            if code is not None:
                msg += f" (code {code}{': ' + reason if reason else ''})"
            if cause is not None:
                msg += f" after {cause.code}: {cause.message}"
            exc = ConnectionClosedError(msg, close_code=code, close_reason=reason, cause_error=cause)
        self._closed_exc = exc
        # Every waiting thread is woken now, whichever of them was reading.
        for call in self._core.connection_lost(exc):
            self._finish(call, None, exc)
        for call in self._close_waiters:
            self._finish(call, None, None)
        for env in list(self._envs.values()):
            env._closed = True

    def _apply_event(self, ev: ServerEvent) -> None:  # with _lock held
        self.events.append(ev)
        if len(self.events) > 256:
            del self.events[:128]
        if ev.event == "session_closed" and ev.session is not None:
            env = self._envs.get(ev.session)
            if env is not None:
                env._closed = True
                env.closed_reason = ev.details
        elif ev.event == "shutdown":
            self.shutting_down = True

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
                raise RequestTimeoutError(
                    f"{type_} request {rid} got no reply within {timeout:g} s",
                    details={"id": rid, "type": type_, "timeout_s": timeout},
                )
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

    def request(self, type_: str, params: dict[str, Any] | None = None, *, timeout: float | None = _UNSET) -> Any:
        """Send one raw request and return its ``result`` (raises the mapped error otherwise).

        CAPACITY errors are retried when the client was created with ``retry_capacity=True``.
        """
        if not self.retry_capacity:
            return self._request_once(type_, params, timeout)
        attempt = 0
        while True:
            attempt += 1
            try:
                return self._request_once(type_, params, timeout)
            except SandgymError as exc:
                if exc.code != "CAPACITY" or attempt >= self.capacity_max_attempts:
                    raise
                time.sleep(self._capacity_delay(exc, attempt))

    def _capacity_delay(self, exc: SandgymError, attempt: int) -> float:
        return capacity_delay(exc, attempt, self.capacity_max_delay)

    def _request_once(self, type_: str, params: dict[str, Any] | None, timeout: Any) -> Any:
        call = _Call()
        with self._lock:
            if self._closed_exc is not None:
                raise self._closed_exc
            if self._reading and self._reader_ident == threading.get_ident():
                raise RuntimeError(
                    "sandgym.Client called from its own on_event handler; do the call after the "
                    "handler returns (e.g. hand it to another thread)"
                )
            rid, data = self._core.request(type_, params, call)
        try:
            self._ws.send(data)
        except websockets.exceptions.ConnectionClosed:
            with self._lock:
                self._core.cancel(rid)
            self.wait_closed(timeout=5.0)  # deliver what was received, record the close and its cause
            raise self._closed_exc or ConnectionClosedError("connection closed") from None
        except BaseException:
            with self._lock:
                self._core.cancel(rid)
            raise
        if timeout is _UNSET:
            timeout = self.timeout
        return self._wait(call, rid, type_, timeout)

    # ------------------------------------------------------------------ operations

    def ping(self, *, timeout: float | None = _UNSET) -> float:
        """Round trip to the server; returns the measured seconds."""
        t0 = time.perf_counter()
        self.request("ping", {"t": time.time() * 1000.0}, timeout=timeout)
        return time.perf_counter() - t0

    def list_envs(self) -> list[dict[str, Any]]:
        """The env specs the server offers (``env_spec`` dicts, see the protocol)."""
        res = self.request("list_envs")
        return list(res.get("envs", []))

    def make(self, env_id: str, **kwargs: Any) -> "Env":
        """Create a session of ``env_id`` with env ``kwargs``; returns an :class:`Env`."""
        params: dict[str, Any] = {"env_id": env_id}
        if kwargs:
            params["kwargs"] = kwargs
        res = self.request("make", params)
        env = Env(self, res["session"], res.get("env_spec") or {"id": env_id})
        self._envs[env.session] = env
        return env

    def batch(self, requests: Sequence[Mapping[str, Any]]) -> list[Any]:
        """Several reset/step/close items in one frame; see :meth:`AsyncClient.batch`. Returns one
        entry per item: its result dict or the :class:`SandgymError` instance (not raised)."""
        items: list[dict[str, Any]] = []
        for req in requests:
            item = dict(req)
            env = item.pop("env", None)
            if env is not None:
                item["session"] = env.session
            elif isinstance(item.get("session"), Env):
                item["session"] = item["session"].session
            items.append(item)
        res = self.request("batch", {"requests": items})
        return _core.batch_results(res)

    def step_many(self, envs: Sequence["Env"], actions: Sequence[Any]) -> list[StepResult | SandgymError]:
        """Step several sessions in one ``batch`` frame (chunked by the server's ``max_batch``)."""
        if len(envs) != len(actions):
            raise ValueError("envs and actions must have the same length")
        limit = int(self.limits.get("max_batch") or 64)
        out: list[StepResult | SandgymError] = []
        for i in range(0, len(envs), limit):
            chunk = [
                {"type": "step", "session": e.session, "action": a}
                for e, a in zip(envs[i : i + limit], actions[i : i + limit])
            ]
            for r in self.batch(chunk):
                out.append(r if isinstance(r, SandgymError) else _step_tuple(r))
        return out


class Env(EnvView):
    """One session on a :class:`Client` (blocking ``reset`` / ``step`` / ``close``)."""

    def __init__(self, client: Client, session: str, spec: Mapping[str, Any]) -> None:
        super().__init__(session, spec)
        self.client = client

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None, timeout: float | None = _UNSET
    ) -> tuple[Any, dict[str, Any]]:
        """Start an episode; returns ``(observation, info)``. ``timeout`` overrides the client's."""
        res = self.client.request("reset", _core.reset_params(self.session, seed, options), timeout=timeout)
        return res.get("observation"), dict(res.get("info") or {})

    def step(self, action: Any, *, timeout: float | None = _UNSET) -> StepResult:
        """Returns ``(observation, reward, terminated, truncated, info)``."""
        return _step_tuple(self.client.request("step", {"session": self.session, "action": action}, timeout=timeout))

    def close(self) -> None:
        """Close the session (idempotent; a no-op once the connection is gone)."""
        if self._closed:
            return
        self._closed = True
        if self.client._closed_exc is not None:
            return
        try:
            self.client.request("close", {"session": self.session})
        except ConnectionClosedError:
            pass

    def __enter__(self) -> "Env":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

