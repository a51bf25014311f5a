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

from . import _core
from ._base import (
    DEFAULT_TIMEOUT,
    UNSET,
    ClientBase,
    ConnectOptions,
    EnvView,
    EventHandler,
    connect_error,
    handshake_error,
)
from ._core import Op, StepResult
from .errors import ConnectionClosedError, SandgymError

__all__ = ["AsyncClient", "AsyncEnv", "StepResult", "EventHandler", "DEFAULT_TIMEOUT"]

log = logging.getLogger("sandgym")


class AsyncClient(ClientBase["asyncio.Future[Any]"]):
    """A connection to a sandgym server.

    Create with :meth:`connect` (or ``async with await AsyncClient.connect(...)``). All methods are
    coroutines and may be called concurrently from many tasks: replies are routed by request id.

    ``timeout``: client-side per-request timeout in seconds (None = wait forever). When it expires
    the call raises :class:`RequestTimeoutError` and the late reply is dropped by id.
    ``retry_capacity`` / ``capacity_max_attempts``: retry requests rejected with ``CAPACITY``, sleeping
    ``details.retry_after_ms`` (or an exponential backoff with jitter when absent) between attempts.
    """

    def __init__(self, ws: ClientConnection, *, url: str = "", **options: Any) -> None:
        """Wrap an open WebSocket (``hello`` not done: use :meth:`connect`); ``options`` as for
        :meth:`connect` (those of the handshake are not used here)."""
        super().__init__(url, ConnectOptions(**options))
        self._ws = ws
        self._loop = asyncio.get_running_loop()
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
        await asyncio.shield(self._reader)
        assert self._closed_exc is not None
        return self._closed_exc

    # ------------------------------------------------------------------ reading

    async def _read_loop(self) -> None:
        receive, dispatch = self._core.receive, self._dispatch
        try:
            async for data in self._ws:
                event = dispatch(receive(data))
                if event is not None:
                    res = self._call_on_event(event)
                    if asyncio.iscoroutine(res):
                        self._loop.create_task(res)
        except websockets.exceptions.ConnectionClosed:
            pass
        except Exception as exc:  # pragma: no cover - defensive: never leave callers hanging
            log.exception("sandgym: reader failed")
            self._fail_all(ConnectionClosedError(f"client reader failed: {exc!r}"))
        finally:
            self._fail_all(None)

    def _finish(self, fut: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
        if not fut.done():
            if error is None:
                fut.set_result(result)
            else:
                fut.set_exception(error)

    # ------------------------------------------------------------------ requests

    async def request(
        self, type_: str, params: dict[str, Any] | None = None, *, timeout: float | None = UNSET
    ) -> Any:
        """Send one raw request and return its ``result`` (raises the mapped error otherwise).

        CAPACITY errors are retried when the client was created with ``retry_capacity=True``.
        """
        return await self._call(Op(type_, params), timeout)

    async def _call(self, op: Op, timeout: float | None = UNSET) -> Any:
        """Carry one operation to the server and its result back (CAPACITY retried when enabled)."""
        attempt = 1
        while True:
            try:
                return op.parse(await self._request_once(op.type, op.params, timeout))
            except SandgymError as exc:
                delay = self._retry_delay(exc, attempt)
                if delay is None:
                    raise
            await asyncio.sleep(delay)
            attempt += 1

    async def _request_once(self, type_: str, params: dict[str, Any] | None, timeout: Any) -> Any:
        if self._closed_exc is not None:
            raise self._closed_exc
        loop = self._loop
        fut: asyncio.Future[Any] = loop.create_future()
        rid, data = self._core.request(type_, params, fut)
        try:
            await self._ws.send(data)
        except websockets.exceptions.ConnectionClosed:
            self._core.cancel(rid)
            await asyncio.sleep(0)  # let the reader record the close first
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

    async def make(self, env_id: str, **kwargs: Any) -> AsyncEnv:
        """Create a session of ``env_id`` with env ``kwargs``; returns an :class:`AsyncEnv`."""
        return self._register(AsyncEnv(self, *await self._call(_core.make_op(env_id, kwargs))))

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
    ) -> tuple[Any, dict[str, Any]]:
        """Start an episode; returns ``(observation, info)``. ``timeout`` overrides the client's."""
        return await self.client._call(_core.reset_op(self.session, seed, options), timeout)  # type: ignore[no-any-return]

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
