"""Blocking client with the same names as the asyncio one.

Each :class:`Client` runs its own private event loop on a background thread and submits work with
``asyncio.run_coroutine_threadsafe``. It never touches the caller's event loop, so it works the same
in a plain script, in a thread pool, and inside a running loop (a Jupyter notebook): the blocking
call only waits on a ``concurrent.futures.Future``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import weakref
from typing import Any, Coroutine, Mapping, Sequence, TypeVar

from .client import _UNSET, DEFAULT_TIMEOUT, AsyncClient, AsyncEnv, EventHandler, StepResult
from .errors import SandgymError

__all__ = ["Client", "Env"]

T = TypeVar("T")


class _LoopThread:
    """A private event loop running forever on a daemon thread."""

    def __init__(self, name: str = "sandgym-loop") -> None:
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()

        def run() -> None:
            asyncio.set_event_loop(self.loop)
            self.loop.call_soon(ready.set)
            self.loop.run_forever()

        self.thread = threading.Thread(target=run, name=name, daemon=True)
        self.thread.start()
        ready.wait()
        self._finalizer = weakref.finalize(self, _stop_loop, self.loop, self.thread)

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        if threading.current_thread() is self.thread:
            coro.close()
            raise RuntimeError(
                "sandgym.Client called from its own event-loop thread (e.g. inside an on_event "
                "handler); use the AsyncClient there"
            )
        if not self.thread.is_alive():
            coro.close()
            raise RuntimeError("sandgym.Client is closed")
        # Hand-rolled run_coroutine_threadsafe: one call_soon_threadsafe and one done-callback
        # (no two-way future chaining), which is measurably cheaper on the per-step hot path.
        fut: concurrent.futures.Future[T] = concurrent.futures.Future()
        holder: list[asyncio.Task[T]] = []

        def done(task: asyncio.Task[T]) -> None:
            if fut.cancelled():  # the caller stopped waiting (KeyboardInterrupt)
                return
            if task.cancelled():
                fut.cancel()
            elif (exc := task.exception()) is not None:
                fut.set_exception(exc)
            else:
                fut.set_result(task.result())

        def start() -> None:
            if fut.cancelled():
                coro.close()
                return
            task = self.loop.create_task(coro)
            holder.append(task)
            task.add_done_callback(done)

        self.loop.call_soon_threadsafe(start)
        try:
            return fut.result()
        except (KeyboardInterrupt, SystemExit):
            # Stop waiting: cancelling the task abandons the request id (its late reply is dropped).
            fut.cancel()
            self.loop.call_soon_threadsafe(lambda: holder and holder[0].cancel())
            raise
        except concurrent.futures.CancelledError:
            raise RuntimeError("sandgym.Client: the call was cancelled (client closed?)") from None

    def stop(self) -> None:
        self._finalizer()


def _stop_loop(loop: asyncio.AbstractEventLoop, thread: threading.Thread) -> None:
    if loop.is_closed():
        return
    if thread.is_alive():
        loop.call_soon_threadsafe(loop.stop)
        if thread is not threading.current_thread():
            thread.join(timeout=5)
    if not loop.is_running():
        loop.close()


class Client:
    """Blocking sandgym client (same methods as :class:`AsyncClient`, without ``await``).

    ``Client(url, ...)`` or ``Client.connect(url, ...)`` connect immediately; see
    :meth:`AsyncClient.connect` for the parameters. Thread-safe: several threads may share one
    client (their requests are multiplexed on the connection).
    """

    def __init__(
        self,
        url: str,
        *,
        token: str | None = None,
        encoding: str = "json",
        client_name: str = "sandgym-python",
        timeout: float | None = DEFAULT_TIMEOUT,
        connect_timeout: float = 10.0,
        retry_capacity: bool = False,
        capacity_max_attempts: int = 8,
        on_event: EventHandler | None = None,
    ) -> None:
        self._lt = _LoopThread()
        try:
            self._async: AsyncClient = self._lt.run(
                AsyncClient.connect(
                    url,
                    token=token,
                    encoding=encoding,
                    client_name=client_name,
                    timeout=timeout,
                    connect_timeout=connect_timeout,
                    retry_capacity=retry_capacity,
                    capacity_max_attempts=capacity_max_attempts,
                    on_event=on_event,
                )
            )
        except BaseException:
            self._lt.stop()
            raise

    @classmethod
    def connect(cls, url: str, **kwargs: Any) -> "Client":
        return cls(url, **kwargs)

    # plain attributes of the underlying client
    @property
    def aclient(self) -> AsyncClient:
        """The underlying :class:`AsyncClient` (lives on the private loop thread)."""
        return self._async

    @property
    def url(self) -> str:
        return self._async.url

    @property
    def encoding(self) -> str:
        return self._async.encoding

    @property
    def server_info(self) -> dict[str, Any]:
        return self._async.server_info

    @property
    def capabilities(self) -> dict[str, Any]:
        return self._async.capabilities

    @property
    def limits(self) -> dict[str, Any]:
        return self._async.limits

    @property
    def closed(self) -> bool:
        return self._async.closed

    @property
    def timeout(self) -> float | None:
        return self._async.timeout

    @timeout.setter
    def timeout(self, value: float | None) -> None:
        self._async.timeout = value

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        return self._lt.run(coro)

    def request(self, type_: str, params: dict[str, Any] | None = None, **kw: Any) -> Any:
        return self._run(self._async.request(type_, params, **kw))

    def ping(self, **kw: Any) -> float:
        return self._run(self._async.ping(**kw))

    def list_envs(self) -> list[dict[str, Any]]:
        return self._run(self._async.list_envs())

    def make(self, env_id: str, **kwargs: Any) -> "Env":
        return Env(self, self._run(self._async.make(env_id, **kwargs)))

    def batch(self, requests: Sequence[Mapping[str, Any]]) -> list[Any]:
        items = []
        for req in requests:
            item = dict(req)
            env = item.get("env")
            if isinstance(env, Env):
                item["env"] = env._aenv
            if isinstance(item.get("session"), Env):
                item["session"] = item["session"].session
            items.append(item)
        return self._run(self._async.batch(items))

    def step_many(self, envs: Sequence["Env"], actions: Sequence[Any]) -> list[StepResult | SandgymError]:
        return self._run(self._async.step_many([e._aenv for e in envs], actions))

    def close(self) -> None:
        """Close the connection and stop the private loop thread. Idempotent."""
        if self._lt.thread.is_alive():
            try:
                self._run(self._async.close())
            finally:
                self._lt.stop()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Env:
    """One session on a :class:`Client` (blocking ``reset`` / ``step`` / ``close``)."""

    def __init__(self, client: Client, aenv: AsyncEnv) -> None:
        self.client = client
        self._aenv = aenv

    session = property(lambda self: self._aenv.session)
    spec = property(lambda self: self._aenv.spec)
    env_id = property(lambda self: self._aenv.env_id)
    observation_space = property(lambda self: self._aenv.observation_space)
    action_space = property(lambda self: self._aenv.action_space)
    tools = property(lambda self: self._aenv.tools)
    closed = property(lambda self: self._aenv.closed)
    closed_reason = property(lambda self: self._aenv.closed_reason)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None, timeout: float | None = _UNSET
    ) -> tuple[Any, dict[str, Any]]:
        return self.client._run(self._aenv.reset(seed=seed, options=options, timeout=timeout))

    def step(self, action: Any, *, timeout: float | None = _UNSET) -> StepResult:
        return self.client._run(self._aenv.step(action, timeout=timeout))

    def close(self) -> None:
        if self._aenv.closed or not self.client._lt.thread.is_alive():
            return
        self.client._run(self._aenv.close())

    def __enter__(self) -> "Env":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return repr(self._aenv).replace("AsyncEnv", "Env")
