"""Pieces the async and the blocking layers share verbatim: the read-only view of a session's
env spec, and the CAPACITY backoff. Kept here so the two layers cannot drift apart."""
from __future__ import annotations

import random
from typing import Any, Mapping

from .errors import SandgymError


class EnvView:
    """The spec-derived, I/O-free part of an env handle (``AsyncEnv`` and ``Env`` add the calls)."""

    def __init__(self, session: str, spec: Mapping[str, Any]) -> None:
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

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"<{type(self).__name__} {self.env_id} session={self.session} {state}>"


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
    from ._version import __version__

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

    from .errors import ERROR_CLASSES, ConnectionClosedError

    if isinstance(exc, websockets.exceptions.InvalidStatus):
        status = exc.response.status_code
        if status in (401, 403):
            cls_ = ERROR_CLASSES.get("UNAUTHORIZED", SandgymError)
            return cls_(f"server refused the connection: HTTP {status}", code="UNAUTHORIZED")
        return ConnectionClosedError(f"cannot connect to {url}: HTTP {status}")
    return ConnectionClosedError(f"cannot connect to {url}: {exc}")
