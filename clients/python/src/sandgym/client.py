"""asyncio client: one WebSocket, many concurrent sessions, requests multiplexed by id."""

from __future__ import annotations

import asyncio
import logging
import time
import weakref
from typing import Any, Callable, Mapping, Sequence

import websockets
from websockets.asyncio.client import ClientConnection, connect as ws_connect

from . import _core
from ._core import Discarded, ProtocolCore, Rejected, Resolved, ServerEvent, Unroutable
from ._version import __version__
from ._shared import EnvView, capacity_delay, connect_error, connect_options
from .errors import (
    ConnectionClosedError,
    RequestTimeoutError,
    SandgymError,
)

__all__ = ["AsyncClient", "AsyncEnv", "StepResult", "EventHandler", "DEFAULT_TIMEOUT"]

log = logging.getLogger("sandgym")

StepResult = tuple[Any, float, bool, bool, dict[str, Any]]
EventHandler = Callable[[ServerEvent], Any]

#: Default client-side per-request timeout in seconds. Never wait forever on a wedged server; the
#: server's own step deadline (limits.step_timeout_ms) normally fires long before this.
DEFAULT_TIMEOUT = 300.0

_UNSET: Any = object()


def _ws_close_info(ws: ClientConnection) -> tuple[int | None, str]:
    proto = getattr(ws, "protocol", None)
    for frame in (getattr(proto, "close_rcvd", None), getattr(proto, "close_sent", None)):
        if frame is not None:
            return frame.code, frame.reason
    return None, ""


class AsyncClient:
    """A connection to a sandgym server.

    Create with :meth:`connect` (or ``async with await AsyncClient.connect(...)``). All methods are
    coroutines and may be called concurrently from many tasks: replies are routed by request id.

    ``timeout``: client-side per-request timeout in seconds (None = wait forever). When it expires
    the call raises :class:`RequestTimeoutError` and the late reply is dropped by id.
    ``retry_capacity`` / ``capacity_max_attempts``: retry requests rejected with ``CAPACITY``, sleeping
    ``details.retry_after_ms`` (or an exponential backoff with jitter when absent) between attempts.
    """

    def __init__(
        self,
        ws: ClientConnection,
        *,
        encoding: str = "json",
        timeout: float | None = DEFAULT_TIMEOUT,
        retry_capacity: bool = False,
        capacity_max_attempts: int = 8,
        capacity_max_delay: float = 10.0,
        on_event: EventHandler | None = None,
        url: str = "",
    ) -> None:
        self._ws = ws
        self._core: ProtocolCore[asyncio.Future[Any]] = ProtocolCore(encoding)
        self._loop = asyncio.get_running_loop()
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
        self.events: list[ServerEvent] = []  # last events, bounded (see _on_event)
        self._envs: weakref.WeakValueDictionary[str, AsyncEnv] = weakref.WeakValueDictionary()
        self._connection_error: SandgymError | None = None
        self._closed_exc: ConnectionClosedError | None = None
        self._reader = self._loop.create_task(self._read_loop(), name="sandgym-reader")

    # ------------------------------------------------------------------ lifecycle

    @classmethod
    async def connect(
        cls,
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
        on_event: EventHandler | None = None,
        max_size: int | None = 256 * 1024 * 1024,
    ) -> "AsyncClient":
        """Open the WebSocket and perform the ``hello`` handshake.

        Raises :class:`ConnectionClosedError` when the server cannot be reached or closes during the
        handshake, :class:`UnauthorizedError` for a bad token, :class:`UnsupportedVersionError` when
        no protocol version is shared.
        """
        if encoding not in ("json", "msgpack"):
            raise ValueError(f"unknown encoding {encoding!r} (use 'json' or 'msgpack')")
        try:
            ws = await ws_connect(url, **connect_options(token, connect_timeout, max_size, client_name, client_version))
        except (OSError, asyncio.TimeoutError, websockets.exceptions.WebSocketException) as exc:
            raise connect_error(exc, url) from exc
        client = cls(
            ws,
            encoding=encoding,
            timeout=timeout,
            retry_capacity=retry_capacity,
            capacity_max_attempts=capacity_max_attempts,
            on_event=on_event,
            url=url,
        )
        try:
            hello = await client.request(
                "hello",
                _core.hello_params(client_name=client_name, client_version=client_version, token=token),
                timeout=connect_timeout,
            )
        except ConnectionClosedError as exc:
            await client.close()
            if exc.cause_error is not None:  # e.g. UNAUTHORIZED sent before the close
                raise exc.cause_error from exc
            raise
        except BaseException:
            await client.close()
            raise
        client._on_hello(hello)
        return client

    def _on_hello(self, hello: Mapping[str, Any]) -> None:
        self.protocol_version = hello.get("version")
        self.server_info = dict(hello.get("server") or {})
        self.capabilities = dict(hello.get("capabilities") or {})
        self.limits = dict(hello.get("limits") or {})
        mmb = self.limits.get("max_message_bytes")
        if isinstance(mmb, int) and mmb > 0:
            self._core.max_message_bytes = mmb

    async def close(self) -> None:
        """Close the connection (sessions on it are closed by the server). Idempotent."""
        try:
            await self._ws.close()
        except Exception:  # pragma: no cover - closing a broken socket
            pass
        try:
            await asyncio.wait_for(asyncio.shield(self._reader), 5)
        except (asyncio.TimeoutError, asyncio.CancelledError, Exception):
            self._reader.cancel()
        self._fail_all(None)

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def closed(self) -> bool:
        return self._closed_exc is not None

    @property
    def pending(self) -> int:
        """Number of requests awaiting a reply."""
        return self._core.pending_count

    @property
    def open_sessions(self) -> int:
        return sum(1 for e in list(self._envs.values()) if not e.closed)

    async def wait_closed(self) -> ConnectionClosedError:
        """Wait until the connection is gone; returns the error pending calls failed with."""
        await asyncio.shield(self._reader)
        assert self._closed_exc is not None
        return self._closed_exc

    # ------------------------------------------------------------------ reading

    async def _read_loop(self) -> None:
        core = self._core
        try:
            async for data in self._ws:
                incoming = core.receive(data)
                if isinstance(incoming, Resolved):
                    fut = incoming.token
                    if not fut.done():
                        fut.set_result(incoming.result)
                elif isinstance(incoming, Rejected):
                    fut = incoming.token
                    if not fut.done():
                        fut.set_exception(incoming.error)
                elif isinstance(incoming, ServerEvent):
                    self._on_event(incoming)
                elif isinstance(incoming, Unroutable):
                    err = incoming.error
                    if err.scope == "connection":  # sent right before the server closes
                        self._connection_error = err
                        log.info("sandgym: server error before close: %s", err)
                    else:
                        log.warning("sandgym: unroutable frame from server: %s", err)
                elif isinstance(incoming, Discarded):
                    log.debug("sandgym: dropped late reply for timed-out request %d", incoming.id)
        except websockets.exceptions.ConnectionClosed:
            pass
        except Exception as exc:  # pragma: no cover - defensive: never leave callers hanging
            log.exception("sandgym: reader failed")
            self._fail_all(ConnectionClosedError(f"client reader failed: {exc!r}"))
        finally:
            self._fail_all(None)

    def _fail_all(self, exc: ConnectionClosedError | None) -> None:
        if self._closed_exc is not None:
            return
        if exc is None:
            code, reason = _ws_close_info(self._ws)
            cause = self._connection_error
            msg = f"connection to {self.url or 'server'} closed"
            if code is not None:
                msg += f" (code {code}{': ' + reason if reason else ''})"
            if cause is not None:
                msg += f" after {cause.code}: {cause.message}"
            exc = ConnectionClosedError(msg, close_code=code, close_reason=reason, cause_error=cause)
        self._closed_exc = exc
        for fut in self._core.connection_lost(exc):
            if not fut.done():
                fut.set_exception(exc)
        for env in list(self._envs.values()):
            env._closed = True

    def _on_event(self, ev: ServerEvent) -> None:
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
        if self.on_event is not None:
            try:
                res = self.on_event(ev)
                if asyncio.iscoroutine(res):
                    self._loop.create_task(res)
            except Exception:  # pragma: no cover - user callback
                log.exception("sandgym: on_event handler failed")

    # ------------------------------------------------------------------ requests

    async def request(
        self, type_: str, params: dict[str, Any] | None = None, *, timeout: float | None = _UNSET
    ) -> Any:
        """Send one raw request and return its ``result`` (raises the mapped error otherwise).

        CAPACITY errors are retried when the client was created with ``retry_capacity=True``.
        """
        if not self.retry_capacity:
            return await self._request_once(type_, params, timeout)
        attempt = 0
        while True:
            attempt += 1
            try:
                return await self._request_once(type_, params, timeout)
            except SandgymError as exc:
                if exc.code != "CAPACITY" or attempt >= self.capacity_max_attempts:
                    raise
                await asyncio.sleep(self._capacity_delay(exc, attempt))

    def _capacity_delay(self, exc: SandgymError, attempt: int) -> float:
        return capacity_delay(exc, attempt, self.capacity_max_delay)

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
        if timeout is _UNSET:
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
        if fut.done():
            return
        self._core.abandon(rid)
        fut.set_exception(
            RequestTimeoutError(
                f"{type_} request {rid} got no reply within {timeout:g} s",
                details={"id": rid, "type": type_, "timeout_s": timeout},
            )
        )

    # ------------------------------------------------------------------ operations

    async def ping(self, *, timeout: float | None = _UNSET) -> float:
        """Round trip to the server; returns the measured seconds."""
        t0 = time.perf_counter()
        await self.request("ping", {"t": time.time() * 1000.0}, timeout=timeout)
        return time.perf_counter() - t0

    async def list_envs(self) -> list[dict[str, Any]]:
        """The env specs the server offers (``env_spec`` dicts, see the protocol)."""
        res = await self.request("list_envs")
        return list(res.get("envs", []))

    async def make(self, env_id: str, **kwargs: Any) -> "AsyncEnv":
        """Create a session of ``env_id`` with env ``kwargs``; returns an :class:`AsyncEnv`."""
        params: dict[str, Any] = {"env_id": env_id}
        if kwargs:
            params["kwargs"] = kwargs
        res = await self.request("make", params)
        env = AsyncEnv(self, res["session"], res.get("env_spec") or {"id": env_id})
        self._envs[env.session] = env
        return env

    async def batch(self, requests: Sequence[Mapping[str, Any]]) -> list[Any]:
        """Send several reset/step/close items in one frame.

        Each item is ``{"type": "reset"|"step"|"close", "session": str | AsyncEnv, ...params}``
        (``"env": AsyncEnv`` is accepted instead of ``session``). Returns one entry per item, in
        order: the item's result dict, or the :class:`SandgymError` instance for a failed item
        (not raised, so one bad item does not hide the others' results).
        """
        items: list[dict[str, Any]] = []
        for req in requests:
            item = dict(req)
            env = item.pop("env", None)
            if env is not None:
                item["session"] = env.session
            elif isinstance(item.get("session"), AsyncEnv):
                item["session"] = item["session"].session
            items.append(item)
        res = await self.request("batch", {"requests": items})
        return _core.batch_results(res)

    async def step_many(self, envs: Sequence["AsyncEnv"], actions: Sequence[Any]) -> list[StepResult | SandgymError]:
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
            for r in await self.batch(chunk):
                out.append(r if isinstance(r, SandgymError) else _step_tuple(r))
        return out


def _step_tuple(res: Mapping[str, Any]) -> StepResult:
    return (
        res.get("observation"),
        float(res.get("reward", 0.0)),
        bool(res.get("terminated", False)),
        bool(res.get("truncated", False)),
        dict(res.get("info") or {}),
    )


class AsyncEnv(EnvView):
    """One session on an :class:`AsyncClient` (Gymnasium-style ``reset`` / ``step`` / ``close``)."""

    def __init__(self, client: AsyncClient, session: str, spec: Mapping[str, Any]) -> None:
        super().__init__(session, spec)
        self.client = client

    async def reset(
        self,
        *,
        seed: int | None = None,
        options: dict[str, Any] | None = None,
        timeout: float | None = _UNSET,
    ) -> tuple[Any, dict[str, Any]]:
        """Start an episode; returns ``(observation, info)``. ``timeout`` overrides the client's."""
        res = await self.client.request(
            "reset", _core.reset_params(self.session, seed, options), timeout=timeout
        )
        return res.get("observation"), dict(res.get("info") or {})

    async def step(self, action: Any, *, timeout: float | None = _UNSET) -> StepResult:
        """Returns ``(observation, reward, terminated, truncated, info)``. ``timeout`` overrides the
        client's per-request timeout for this call."""
        res = await self.client.request(
            "step", {"session": self.session, "action": action}, timeout=timeout
        )
        return _step_tuple(res)

    async def close(self) -> None:
        """Close the session (idempotent; a no-op once the connection is gone)."""
        if self._closed:
            return
        self._closed = True
        if self.client.closed:
            return
        try:
            await self.client.request("close", {"session": self.session})
        except ConnectionClosedError:
            pass

    async def __aenter__(self) -> "AsyncEnv":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


