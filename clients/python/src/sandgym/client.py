"""asyncio client: one WebSocket, many concurrent sessions, requests multiplexed by id.

This module is only the asyncio I/O: it opens the socket, sends each operation's frame, waits for
its reply on a future (with the client-side timeout) and runs one reader task. What each operation
sends and how its reply is read live in :mod:`sandgym._core`; the connection's state (hello, events,
close errors, CAPACITY retries) in :mod:`sandgym._base`, shared with the blocking :mod:`sandgym.sync`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from typing import Any

import websockets
from websockets.asyncio.client import ClientConnection, connect as ws_connect
from websockets.protocol import State

from . import _core
from ._base import (
    DEFAULT_TIMEOUT,
    UNSET,
    ClientBase,
    ConnectOptions,
    EnvView,
    EventHandler,
    GroupView,
    QueueCallback,
    connect_error,
    handshake_error,
)
from ._core import Op, Scheduling, StepResult
from .errors import (
    ConnectionClosedError,
    RequestTimeoutError,
    ResumeExpiredError,
    ResumeRefusedError,
    SandgymError,
    UnauthorizedError,
)

__all__ = ["AsyncClient", "AsyncEnv", "AsyncEnvGroup", "StepResult", "EventHandler", "DEFAULT_TIMEOUT"]

log = logging.getLogger("sandgym")


class AsyncClient(ClientBase["asyncio.Future[Any]"]):
    """A connection to a sandgym server.

    Create with :meth:`connect` (or ``async with await AsyncClient.connect(...)``). All methods are
    coroutines and may be called concurrently from many tasks: replies are routed by request id.

    ``timeout``: client-side per-request timeout in seconds (None = wait forever). When it expires
    the call raises :class:`RequestTimeoutError` and the late reply is dropped by id.
    ``retry_capacity`` / ``capacity_max_attempts``: retry requests rejected with ``CAPACITY``, sleeping
    ``details.retry_after_ms`` (or an exponential backoff with jitter when absent) between attempts.

    Session resume (PROTOCOL.md §5a): when the server offers it and the socket drops without a close
    frame, the client reconnects with capped, jittered backoff within the grace period, resumes, sends
    again only the requests the server never received (no step runs twice) and lets the held replies
    settle the pending calls; calls made meanwhile wait and follow. When the grace period passes, or
    the server answers RESUME_EXPIRED / RESUME_REFUSED, the pending calls and the handles of the old
    sessions fail with :class:`ResumeExpiredError` / :class:`ResumeRefusedError` and a warning is
    logged on the ``sandgym`` logger. ``reconnect=False`` opts out.
    """

    _supports_resume = True

    def __init__(self, ws: ClientConnection, *, url: str = "", **options: Any) -> None:
        """Wrap an open WebSocket (``hello`` not done: use :meth:`connect`); ``options`` as for
        :meth:`connect` (those of the handshake are not used here)."""
        self._options = ConnectOptions(**options)
        super().__init__(url, self._options)
        self._ws = ws
        self._loop = asyncio.get_running_loop()
        #: The reconnect in progress (requests wait in the outbox meanwhile).
        self._resuming: asyncio.Task[None] | None = None
        #: Calls of the reconnect itself (hello, resume): they fail with their socket.
        self._direct: set[asyncio.Future[Any]] = set()
        #: Coroutine callbacks (on_event, on_queue) still running.
        self._callbacks: set[asyncio.Task[Any]] = set()
        self._reader = self._loop.create_task(self._read_loop(), name="sandgym-reader")

    # ------------------------------------------------------------------ lifecycle

    @classmethod
    async def connect(cls, url: str, **options: Any) -> AsyncClient:
        """Open the WebSocket and perform the ``hello`` handshake.

        ``options`` (keywords, all optional): ``token``, ``encoding="json"|"msgpack"``,
        ``client_name``, ``client_version``, ``timeout=300.0``, ``connect_timeout=10.0``,
        ``retry_capacity=False``, ``capacity_max_attempts=8``, ``capacity_max_delay=10.0``,
        ``on_event``, ``max_size`` (see :class:`sandgym._base.ConnectOptions`).

        Raises :class:`ConnectionClosedError` when the server cannot be reached or closes during the
        handshake, :class:`UnauthorizedError` for a bad token, :class:`UnsupportedVersionError` when
        no protocol version is shared.
        """
        opts = ConnectOptions(**options)
        try:
            ws = await ws_connect(url, **opts.ws_options())
        except (OSError, asyncio.TimeoutError, websockets.exceptions.WebSocketException) as exc:
            raise connect_error(exc, url) from exc
        client = cls(ws, url=url, **options)
        try:
            client._on_hello(await client._call(opts.hello_op(), opts.connect_timeout))
        except BaseException as exc:
            await client.close()
            cause = handshake_error(exc)
            if cause is None:
                raise
            raise cause from exc
        return client

    async def close(self) -> None:
        """Close the connection (sessions on it are closed by the server). Idempotent."""
        self._user_closed = True
        if self._resuming is not None:
            self._resuming.cancel()
            self._resuming = None
            self._fail_all(ConnectionClosedError("client closed while reconnecting"))
        try:
            await self._ws.close()
        except Exception:  # noqa: BLE001  # pragma: no cover - closing a broken socket
            pass
        try:
            await asyncio.wait_for(asyncio.shield(self._reader), 5)
        except (asyncio.TimeoutError, asyncio.CancelledError, Exception):  # noqa: BLE001 - any end of the reader is fine here
            self._reader.cancel()
        self._fail_all(None)

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def closed(self) -> bool:
        return self._closed_exc is not None

    async def wait_closed(self) -> ConnectionClosedError:
        """Wait until the connection is gone; returns the error pending calls failed with."""
        while self._closed_exc is None:
            await asyncio.shield(self._reader)
            if self._resuming is not None:
                await asyncio.shield(self._resuming)
        return self._closed_exc

    @property
    def resuming(self) -> bool:
        """True while the client reconnects to resume its sessions after a drop."""
        return self._resuming is not None

    # ------------------------------------------------------------------ reading

    async def _read_loop(self) -> None:
        receive, dispatch = self._core.receive, self._dispatch
        ws = self._ws
        try:
            async for data in ws:
                event = dispatch(receive(data))
                if event is not None:
                    res = self._call_on_event(event)
                    if asyncio.iscoroutine(res):
                        self._spawn(res, "on_event")
                    res = self._run_watch(self._core.progress(event))
                    if asyncio.iscoroutine(res):
                        self._spawn(res, "on_queue")
        except websockets.exceptions.ConnectionClosed:
            pass
        except Exception as exc:  # pragma: no cover - defensive: never leave callers hanging
            log.exception("sandgym: reader failed")
            self._fail_all(ConnectionClosedError(f"client reader failed: {exc!r}"))
        finally:
            self._reader_ended(ws)

    def _spawn(self, coro: Any, what: str) -> None:
        """Run a coroutine callback as a task, held until it ends (a task nobody references may be
        collected mid-run) and its failure logged instead of lost."""
        task = self._loop.create_task(coro)
        self._callbacks.add(task)

        def done(t: asyncio.Task[Any]) -> None:
            self._callbacks.discard(t)
            if not t.cancelled() and t.exception() is not None:
                log.error("sandgym: %s callback failed", what, exc_info=t.exception())

        task.add_done_callback(done)

    # ------------------------------------------------------------------ resume (PROTOCOL.md §5a)

    def _reader_ended(self, ws: ClientConnection) -> None:
        if ws is not self._ws:
            return  # a socket a reconnect replaced
        if self._resuming is not None:
            # A reconnect attempt's socket failed: its own calls fail, the loop tries again.
            err = ConnectionClosedError("connection closed during a resume attempt")
            for fut in list(self._direct):
                if not fut.done():
                    fut.set_exception(err)
            return
        if self._may_resume(ws):
            self._resuming = self._loop.create_task(self._resume(), name="sandgym-resume")
            return
        self._fail_all(None)

    def _may_resume(self, ws: ClientConnection) -> bool:
        proto = getattr(ws, "protocol", None)
        return self._may_resume_after(getattr(proto, "close_rcvd", None), getattr(proto, "close_sent", None))

    async def _direct_call(self, op: Op, timeout: float) -> Any:
        """A call of the reconnect itself, on the new socket, outside the outbox."""
        fut: asyncio.Future[Any] = self._loop.create_future()
        rid, data = self._core.request(op.type, op.params, fut)
        self._direct.add(fut)
        handle = self._loop.call_later(timeout, self._expire, rid, fut, op.type, timeout)
        try:
            await self._ws.send(data)
            return op.parse(await fut)
        except websockets.exceptions.ConnectionClosed:
            self._core.abandon(rid)
            raise ConnectionClosedError("connection closed during a resume attempt") from None
        finally:
            handle.cancel()
            self._direct.discard(fut)

    async def _resume(self) -> None:
        loop = self._loop
        t0 = loop.time()
        deadline = t0 + self._resume_grace
        owed, old_token, sessions = self._resume_begin()
        log.warning(
            "sandgym: connection to %s lost; reconnecting to resume %d session(s) within %.1f s",
            self.url,
            len(sessions),
            self._resume_grace,
        )
        attempt, delay, last = 0, 0.1, "the connection dropped"
        while not self._user_closed:
            left = deadline - loop.time()
            if left <= 0:
                break
            attempt += 1
            timeout = max(0.001, min(left, self._options.connect_timeout))
            try:
                opts = {**self._options.ws_options(), "open_timeout": timeout}
                ws = await ws_connect(self.url, **opts)
            except (OSError, asyncio.TimeoutError, websockets.exceptions.WebSocketException) as exc:
                last = f"{type(exc).__name__}: {exc}"
            else:
                self._ws = ws
                self._reader = loop.create_task(self._read_loop(), name="sandgym-reader")
                try:
                    self._on_hello(await self._direct_call(self._options.hello_op(), timeout))
                    res = await self._direct_call(_core.resume_op(old_token, self._still_owed(owed)), timeout)
                except (ResumeExpiredError, ResumeRefusedError, UnauthorizedError) as exc:
                    self._resume_failed(exc, owed)
                    return
                except (ConnectionClosedError, RequestTimeoutError, OSError) as exc:
                    last = f"{type(exc).__name__}: {exc}"
                    await ws.close()
                except SandgymError as exc:
                    # Any other answer (an error §5a does not give, a malformed result): the sessions
                    # cannot be taken back. Failing them with it beats a dead reconnect task that
                    # leaves every waiting call hanging (tests/test_resume_attacks.py).
                    self._resume_failed(exc, owed)
                    return
                else:
                    self._resumed(res, attempt, loop.time() - t0)
                    return
            wait, delay = self._backoff(delay)
            wait = min(wait, deadline - loop.time())
            if wait > 0:
                await asyncio.sleep(wait)
        if self._user_closed:
            return
        expired = self._resume_expired(attempt, last, sessions)
        self._resume_failed(expired, owed)
        self._fail_all(
            ConnectionClosedError(f"connection to {self.url} lost: {expired.details['reason']}", cause_error=expired)
        )

    def _resumed(self, res: Mapping[str, Any], attempts: int, seconds: float) -> None:
        frames = self._resumed_frames(res, attempts, seconds)
        self._resuming = None
        for data in frames:
            self._loop.create_task(self._send_quietly(data))

    async def _send_quietly(self, data: str | bytes) -> None:
        # Ordered: the tasks are created in order and each send is one write (websockets keeps order).
        try:
            await self._ws.send(data)
        except websockets.exceptions.ConnectionClosed:
            pass  # the reader sees the drop and resumes again

    def _resume_failed(self, err: SandgymError, owed: list[int]) -> None:
        """The sessions are gone: their pending calls and handles fail with ``err``."""
        self._resuming = None
        for data in self._resume_failed_frames(err, owed):
            if self._ws.state is State.OPEN:
                self._loop.create_task(self._send_quietly(data))

    def _finish(self, fut: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
        if not fut.done():
            if error is None:
                fut.set_result(result)
            else:
                fut.set_exception(error)

    # ------------------------------------------------------------------ requests

    async def request(self, type_: str, params: dict[str, Any] | None = None, *, timeout: float | None = UNSET) -> Any:
        """Send one raw request and return its ``result`` (raises the mapped error otherwise).

        CAPACITY errors are retried when the client was created with ``retry_capacity=True``.
        """
        return await self._call(Op(type_, params), timeout)

    async def _call(self, op: Op, timeout: float | None = UNSET) -> Any:
        """Carry one operation to the server and its result back (CAPACITY retried when enabled)."""
        lost = self._lost_error(op)
        if lost is not None:
            raise lost
        attempt = 1
        while True:
            try:
                return op.parse(await self._request_once(op.type, op.params, timeout, op.watch))
            except SandgymError as exc:
                delay = self._retry_delay(exc, attempt)
                if delay is None:
                    raise
            await asyncio.sleep(delay)
            attempt += 1

    async def _request_once(
        self, type_: str, params: dict[str, Any] | None, timeout: Any, watch: QueueCallback | None = None
    ) -> Any:
        if self._closed_exc is not None:
            raise self._closed_exc
        loop = self._loop
        fut: asyncio.Future[Any] = loop.create_future()
        rid, data = self._core.request(type_, params, fut, watch)
        if self._resuming is not None:
            self._outbox[rid] = data  # goes out after the resume
        else:
            try:
                await self._ws.send(data)
            except websockets.exceptions.ConnectionClosed:
                await asyncio.sleep(0)  # let the reader record the close first
                if self._resuming is not None:
                    self._outbox[rid] = data  # never written: it goes out after the resume
                else:
                    self._core.cancel(rid)
                    raise self._closed_exc or ConnectionClosedError("connection closed") from None
            except BaseException:
                self._core.cancel(rid)
                raise
        if timeout is UNSET:
            timeout = self.timeout
        handle = None
        if timeout is not None:
            handle = loop.call_later(timeout, self._expire, rid, fut, type_, timeout)
        try:
            return await fut
        except asyncio.CancelledError:
            self._core.abandon(rid)
            raise
        finally:
            if handle is not None:
                handle.cancel()

    def _expire(self, rid: int, fut: asyncio.Future[Any], type_: str, timeout: float) -> None:
        if not fut.done():
            self._core.abandon(rid)
            fut.set_exception(self._timeout_error(rid, type_, timeout))

    # ------------------------------------------------------------------ operations (see _core)

    async def ping(self, *, timeout: float | None = UNSET) -> float:
        """Round trip to the server; returns the measured seconds."""
        return await self._call(_core.ping_op(), timeout)  # type: ignore[no-any-return]

    async def list_envs(self) -> list[dict[str, Any]]:
        """The env specs the server offers (``env_spec`` dicts, see the protocol)."""
        return await self._call(_core.list_envs_op())  # type: ignore[no-any-return]

    async def make(
        self,
        env_id: str,
        *,
        scheduling: Scheduling | None = None,
        on_queue: QueueCallback | None = None,
        timeout: float | None = UNSET,
        **kwargs: Any,
    ) -> AsyncEnv:
        """Create a session of ``env_id`` with env ``kwargs``; returns an :class:`AsyncEnv`.

        On a server with ``capabilities.scheduling`` (PROTOCOL.md §6a): ``scheduling`` (a
        :class:`~sandgym.Scheduling`; default the client's) sets the session's priority class, queue
        timeout and preemptibility, which its resets use unless they pass their own; ``on_queue`` is
        called with each :class:`~sandgym.QueueProgress` (``queued``: position and estimated wait;
        ``admitted``) while this request waits for a sandbox. ``timeout`` overrides the client's
        (a request may wait in the queue up to its ``queue_timeout_ms``).
        """
        op = self._make_op(env_id, kwargs, scheduling, on_queue)
        return self._register(AsyncEnv(self, *await self._call(op, timeout)))

    async def group(
        self,
        env_id: str,
        size: int,
        *,
        scheduling: Scheduling | None = None,
        on_queue: QueueCallback | None = None,
        timeout: float | None = UNSET,
        **kwargs: Any,
    ) -> AsyncEnvGroup:
        """Make ``size`` sessions of ``env_id`` admitted as one unit (a GRPO group): the call returns
        when the scheduler admitted all of them at once, never part (PROTOCOL.md §6a; needs
        ``capabilities.scheduling``, at most ``limits.max_group_size``). Returns an
        :class:`AsyncEnvGroup`: its ``envs`` are ordinary sessions (reset, step, close each); its
        :meth:`~AsyncEnvGroup.wait_complete` returns when the server reports the last one closed.
        ``scheduling``, ``on_queue``, ``timeout`` and env ``kwargs`` as for :meth:`make`."""
        op = self._group_op(env_id, size, kwargs, scheduling, on_queue)
        gid, sessions, spec = await self._call(op, timeout)
        return self._register_group(AsyncEnvGroup(self, gid, [AsyncEnv(self, s, spec) for s in sessions], spec))

    async def batch(self, requests: Sequence[Mapping[str, Any]]) -> list[Any]:
        """Send several reset/step/close items in one frame.

        Each item is ``{"type": "reset"|"step"|"close", "session": str | AsyncEnv, ...params}``
        (``"env": AsyncEnv`` is accepted instead of ``session``). Returns one entry per item, in
        order: the item's result dict, or the :class:`SandgymError` instance for a failed item
        (not raised, so one bad item does not hide the others' results).
        """
        return await self._call(self._batch_op(requests))  # type: ignore[no-any-return]

    async def step_many(self, envs: Sequence[AsyncEnv], actions: Sequence[Any]) -> list[StepResult | SandgymError]:
        """Step several sessions in one ``batch`` frame (chunked by the server's ``max_batch``)."""
        return [r for op in self._step_many_ops(envs, actions) for r in await self._call(op)]


class AsyncEnv(EnvView):
    """One session on an :class:`AsyncClient` (Gymnasium-style ``reset`` / ``step`` / ``close``)."""

    client: AsyncClient

    async def reset(
        self,
        *,
        seed: int | None = None,
        options: dict[str, Any] | None = None,
        timeout: float | None = UNSET,
        scheduling: Scheduling | None = None,
        on_queue: QueueCallback | None = None,
    ) -> tuple[Any, dict[str, Any]]:
        """Start an episode; returns ``(observation, info)``. ``timeout`` overrides the client's.
        ``scheduling`` overrides the session's (from :meth:`AsyncClient.make`) for this episode's
        admission; ``on_queue`` gets its ``queued``/``admitted`` events (PROTOCOL.md §6a)."""
        op = _core.reset_op(self.session, seed, options, scheduling, on_queue)
        return await self.client._call(op, timeout)  # type: ignore[no-any-return]

    async def step(self, action: Any, *, timeout: float | None = UNSET) -> StepResult:
        """Returns ``(observation, reward, terminated, truncated, info)``. ``timeout`` overrides the
        client's per-request timeout for this call."""
        return await self.client._call(_core.step_op(self.session, action), timeout)  # type: ignore[no-any-return]

    async def close(self) -> None:
        """Close the session (idempotent; a no-op once the connection is gone)."""
        op = self._close_op()
        if op is not None:
            try:
                await self.client._call(op)
            except ConnectionClosedError:
                pass

    async def __aenter__(self) -> AsyncEnv:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


class AsyncEnvGroup(GroupView[AsyncEnv]):
    """Sessions admitted as one unit (:meth:`AsyncClient.group`). Iterate it or index it for the
    :class:`AsyncEnv` members; ``async with`` closes them all."""

    def __init__(self, client: AsyncClient, group_id: str, envs: list[AsyncEnv], env_spec: Mapping[str, Any]) -> None:
        super().__init__(client, group_id, envs, env_spec)
        self._done = asyncio.Event()

    def _wake(self) -> None:
        self._done.set()

    async def wait_complete(self, timeout: float | None = None) -> list[str]:
        """Wait for the server's ``group_complete`` event (every member closed; their sandboxes are
        free); returns the sessions it named. Raises :class:`ConnectionClosedError` when the connection
        went first, :class:`RequestTimeoutError` after ``timeout`` seconds."""
        try:
            await asyncio.wait_for(self._done.wait(), timeout)
        except asyncio.TimeoutError:
            raise RequestTimeoutError(
                f"group {self.id} not complete within {timeout:g} s", details={"group": self.id, "timeout_s": timeout}
            ) from None
        if not self.complete:
            raise self._lost or ConnectionClosedError("connection closed before the group completed")
        return self.completed_sessions

    async def close(self) -> None:
        """Close every member (concurrently; idempotent)."""
        await asyncio.gather(*(e.close() for e in self.envs))

    async def __aenter__(self) -> AsyncEnvGroup:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
