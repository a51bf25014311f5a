"""Pools of connections, for trainers that outgrow one socket or one server.

A pool holds ``connections_per_url`` connections to each URL and places every new session on one of
them: ``"least_loaded"`` (default: the connection with the fewest open sessions, ties broken in
round-robin order) or ``"round_robin"``. A session lives on the connection it was placed on. When a
connection has dropped, the next ``make`` that picks its slot reconnects it (the sessions that were
on it are gone: a dropped connection always ends its sessions). A ``make`` rejected with ``CAPACITY``
by one connection is tried on the others before the error is raised.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
from collections.abc import Sequence
from typing import Any, Generic, TypeVar

from .client import AsyncClient, AsyncEnv, AsyncEnvGroup
from .errors import ConnectionClosedError, SandgymError
from .sync import Client, Env, EnvGroup

__all__ = ["AsyncClientPool", "ClientPool"]

T = TypeVar("T")
PLACEMENTS = ("least_loaded", "round_robin")


C = TypeVar("C", AsyncClient, Client)


class _Placement(Generic[C]):
    """Slots (one per connection), their clients, and where the next session goes; no I/O."""

    def __init__(
        self, urls: Sequence[str], connections_per_url: int, placement: str, client_kwargs: dict[str, Any]
    ) -> None:
        if placement not in PLACEMENTS:
            raise ValueError(f"placement must be one of {PLACEMENTS}")
        if not urls or connections_per_url < 1:
            raise ValueError("need at least one url and connections_per_url >= 1")
        self.placement = placement
        self._slots: list[str] = [u for u in urls for _ in range(connections_per_url)]
        self._clients: list[C | None] = [None] * len(self._slots)
        self._client_kwargs = client_kwargs
        self._rr = itertools.count()

    @property
    def clients(self) -> list[C]:
        return [c for c in self._clients if c is not None and not c.closed]

    def load(self) -> list[int]:
        """Open sessions per slot (dropped connections count 0)."""
        return [c.open_sessions if c is not None and not c.closed else 0 for c in self._clients]

    def _order(self) -> list[int]:
        n = len(self._slots)
        start = next(self._rr) % n
        rr = [(start + k) % n for k in range(n)]
        if self.placement == "round_robin":
            return sorted(rr, key=self._draining)
        load = self.load()
        # stable sort: ties keep round-robin order; a draining server (shutdown event) goes last
        return sorted(rr, key=lambda i: (self._draining(i), load[i]))

    @staticmethod
    def _failover(exc: SandgymError, *, capacity: bool) -> SandgymError:
        """``exc`` from one connection: returned when the next connection may serve the call (this one
        dropped, or, with ``capacity``, its server is full), else raised."""
        if isinstance(exc, ConnectionClosedError) or (capacity and exc.code == "CAPACITY"):
            return exc
        raise exc

    def _draining(self, i: int) -> bool:
        c = self._clients[i]
        return c is not None and c.shutting_down and not c.closed


class AsyncClientPool(_Placement[AsyncClient]):
    """Several :class:`AsyncClient` connections behind one ``make``."""

    def __init__(
        self,
        urls: Sequence[str],
        *,
        connections_per_url: int = 1,
        placement: str = "least_loaded",
        **client_kwargs: Any,
    ) -> None:
        super().__init__(urls, connections_per_url, placement, client_kwargs)
        self._locks = [asyncio.Lock() for _ in self._slots]

    @classmethod
    async def connect(
        cls,
        urls: str | Sequence[str],
        *,
        connections_per_url: int = 1,
        placement: str = "least_loaded",
        **client_kwargs: Any,
    ) -> AsyncClientPool:
        """Connect every slot now (fails if any connection fails)."""
        pool = cls(
            [urls] if isinstance(urls, str) else list(urls),
            connections_per_url=connections_per_url,
            placement=placement,
            **client_kwargs,
        )
        try:
            await asyncio.gather(*(pool._client(i) for i in range(len(pool._slots))))
        except BaseException:
            await pool.close()
            raise
        return pool

    async def _client(self, i: int) -> AsyncClient:
        c = self._clients[i]
        if c is not None and not c.closed:
            return c
        async with self._locks[i]:
            c = self._clients[i]
            if c is None or c.closed:
                c = await AsyncClient.connect(self._slots[i], **self._client_kwargs)
                self._clients[i] = c
            return c

    async def make(self, env_id: str, **kwargs: Any) -> AsyncEnv:
        last: SandgymError | None = None
        for i in self._order():
            try:
                return await (await self._client(i)).make(env_id, **kwargs)
            except SandgymError as exc:
                last = self._failover(exc, capacity=True)
        raise last  # type: ignore[misc]  # there is at least one slot

    async def group(self, env_id: str, size: int, **kwargs: Any) -> AsyncEnvGroup:
        """A group admitted as one unit on one connection (:meth:`AsyncClient.group`); the next
        connection is tried when one is gone or its server answers CAPACITY."""
        last: SandgymError | None = None
        for i in self._order():
            try:
                return await (await self._client(i)).group(env_id, size, **kwargs)
            except SandgymError as exc:
                last = self._failover(exc, capacity=True)
        raise last  # type: ignore[misc]  # there is at least one slot

    async def list_envs(self) -> list[dict[str, Any]]:
        last: SandgymError | None = None
        for i in self._order():
            try:
                return await (await self._client(i)).list_envs()
            except SandgymError as exc:
                last = self._failover(exc, capacity=False)
        raise last  # type: ignore[misc]

    async def close(self) -> None:
        await asyncio.gather(*(c.close() for c in self._clients if c is not None), return_exceptions=True)

    async def __aenter__(self) -> AsyncClientPool:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


class ClientPool(_Placement[Client]):
    """Blocking :class:`AsyncClientPool`: several :class:`Client` connections behind one ``make``
    (same placement, reconnect and CAPACITY rules). Thread-safe like :class:`Client`."""

    def __init__(
        self,
        urls: str | Sequence[str],
        *,
        connections_per_url: int = 1,
        placement: str = "least_loaded",
        **client_kwargs: Any,
    ) -> None:
        super().__init__([urls] if isinstance(urls, str) else list(urls), connections_per_url, placement, client_kwargs)
        self._locks = [threading.Lock() for _ in self._slots]
        try:
            for i in range(len(self._slots)):  # connect every slot now (fails if any fails)
                self._client(i)
        except BaseException:
            self.close()
            raise

    @classmethod
    def connect(cls, urls: str | Sequence[str], **kwargs: Any) -> ClientPool:
        return cls(urls, **kwargs)

    def _client(self, i: int) -> Client:
        c = self._clients[i]
        if c is not None and not c.closed:
            return c
        with self._locks[i]:
            c = self._clients[i]
            if c is None or c.closed:
                c = Client(self._slots[i], **self._client_kwargs)
                self._clients[i] = c
            return c

    def make(self, env_id: str, **kwargs: Any) -> Env:
        last: SandgymError | None = None
        for i in self._order():
            try:
                return self._client(i).make(env_id, **kwargs)
            except SandgymError as exc:
                last = self._failover(exc, capacity=True)
        raise last  # type: ignore[misc]  # there is at least one slot

    def group(self, env_id: str, size: int, **kwargs: Any) -> EnvGroup:
        """A group admitted as one unit on one connection (:meth:`Client.group`), tried on the next
        connection when one is gone or its server answers CAPACITY."""
        last: SandgymError | None = None
        for i in self._order():
            try:
                return self._client(i).group(env_id, size, **kwargs)
            except SandgymError as exc:
                last = self._failover(exc, capacity=True)
        raise last  # type: ignore[misc]  # there is at least one slot

    def list_envs(self) -> list[dict[str, Any]]:
        last: SandgymError | None = None
        for i in self._order():
            try:
                return self._client(i).list_envs()
            except SandgymError as exc:
                last = self._failover(exc, capacity=False)
        raise last  # type: ignore[misc]

    def close(self) -> None:
        for c in self._clients:
            if c is not None:
                try:
                    c.close()
                except Exception:  # noqa: BLE001  # pragma: no cover - closing a broken connection
                    pass

    def __enter__(self) -> ClientPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
