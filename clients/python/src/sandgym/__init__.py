"""sandgym: Python client for the sandgym environment server.

``AsyncClient`` / ``AsyncEnv`` (asyncio) and ``Client`` / ``Env`` (blocking, same method names) speak
protocol v2 over one multiplexed WebSocket; ``AsyncClientPool`` / ``ClientPool`` spread sessions over
several connections; ``sandgym.gym.make`` returns a ``gymnasium.Env``; ``sandgym.spaces`` converts
spaces. Errors live in :mod:`sandgym.errors` (one class per protocol code, re-exported here).
"""

from ._core import QueueProgress, Scheduling
from ._version import __version__
from .client import AsyncClient, AsyncEnv, AsyncEnvGroup, StepResult
from .errors import (  # one exception class per protocol error code (tests check this list)
    ERROR_CLASSES,
    CapacityError,
    ConnectionClosedError,
    ConnectionTimeoutError,
    EnvError,
    HandshakeRequiredError,
    InternalError,
    InvalidActionError,
    InvalidArgumentError,
    InvalidMessageError,
    ParseError,
    PreemptedError,
    RequestTimeoutError,
    ResetNeededError,
    ResumeExpiredError,
    ResumeRefusedError,
    SandboxError,
    SandgymError,
    ServerTimeoutError,
    ShuttingDownError,
    TooLargeError,
    UnauthorizedError,
    UnknownEnvError,
    UnknownSessionError,
    UnknownTypeError,
    UnsupportedError,
    UnsupportedVersionError,
    error_from_wire,
)
from .pool import AsyncClientPool, ClientPool
from .sync import Client, Env, EnvGroup


def connect(url: str, **kwargs: object) -> Client:
    """Blocking client: ``sandgym.connect(url)`` is ``sandgym.Client(url)`` (see Client)."""
    return Client(url, **kwargs)


async def connect_async(url: str, **kwargs: object) -> AsyncClient:
    """asyncio client: ``await sandgym.connect_async(url)`` is ``await AsyncClient.connect(url)``."""
    return await AsyncClient.connect(url, **kwargs)


__all__ = [
    "__version__",
    "AsyncClient",
    "AsyncEnv",
    "AsyncEnvGroup",
    "AsyncClientPool",
    "Client",
    "ClientPool",
    "Env",
    "EnvGroup",
    "QueueProgress",
    "Scheduling",
    "StepResult",
    "connect",
    "connect_async",
    "ERROR_CLASSES",
    "ConnectionClosedError",
    "RequestTimeoutError",
    "SandgymError",
    "error_from_wire",
]
__all__ += [
    "ParseError",
    "InvalidMessageError",
    "HandshakeRequiredError",
    "UnsupportedVersionError",
    "UnknownTypeError",
    "UnsupportedError",
    "UnknownEnvError",
    "UnknownSessionError",
    "InvalidArgumentError",
    "InvalidActionError",
    "ResetNeededError",
    "CapacityError",
    "ServerTimeoutError",
    "EnvError",
    "SandboxError",
    "PreemptedError",
    "UnauthorizedError",
    "TooLargeError",
    "ConnectionTimeoutError",
    "ResumeExpiredError",
    "ResumeRefusedError",
    "ShuttingDownError",
    "InternalError",
]
