"""Exceptions raised by the sandgym client.

Every error the server can send has a protocol code (``protocol/schema/errors.json`` is the one
registry). Each code maps to one exception class under :class:`SandgymError`, named by a fixed rule
so that code and class can be derived from each other:

* ``UPPER_SNAKE`` code -> ``CamelCase`` + ``Error`` (``RESET_NEEDED`` -> ``ResetNeededError``,
  ``CAPACITY`` -> ``CapacityError``); a code that already ends in ``_ERROR`` is not doubled
  (``ENV_ERROR`` -> ``EnvError``, ``PARSE_ERROR`` -> ``ParseError``);
* a name that would shadow a Python builtin gets a ``Server`` prefix (``TIMEOUT`` ->
  ``ServerTimeoutError``: the *env* missed its deadline, unlike the client-side
  :class:`RequestTimeoutError`).

Two errors exist only on the client side: :class:`ConnectionClosedError` (the socket dropped; every
pending call fails with it at once) and :class:`RequestTimeoutError` (the per-request timeout of this
client expired; the late reply is discarded by id, so later replies are never desynchronised).
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

__all__ = [
    "SandgymError",
    "ConnectionClosedError",
    "RequestTimeoutError",
    "ERROR_CLASSES",
    "REGISTRY",
    "class_name_for_code",
    "error_from_wire",
]


class SandgymError(Exception):
    """Base class of every sandgym error.

    Attributes mirror the wire error object: ``code`` (protocol code), ``message``, ``details``
    (dict, possibly empty), ``retryable`` (whether the same request may succeed later) and
    ``scope`` (``"request"``, ``"session"`` or ``"connection"``: what the error affects).
    """

    code: str = "SANDGYM_ERROR"
    default_retryable: bool = False
    default_scope: str = "request"

    def __init__(
        self,
        message: str = "",
        *,
        code: str | None = None,
        details: Mapping[str, Any] | None = None,
        retryable: bool | None = None,
        scope: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.details: dict[str, Any] = dict(details or {})
        self.retryable: bool = self.default_retryable if retryable is None else retryable
        self.scope: str = self.default_scope if scope is None else scope

    def __str__(self) -> str:
        return f"[{self.code}] {self.message}" if self.message else f"[{self.code}]"

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(code={self.code!r}, message={self.message!r}, "
            f"details={self.details!r}, retryable={self.retryable!r}, scope={self.scope!r})"
        )

    def to_wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "code": self.code,
            "message": self.message,
            "retryable": self.retryable,
            "scope": self.scope,
        }
        if self.details:
            out["details"] = dict(self.details)
        return out


class ConnectionClosedError(SandgymError, ConnectionError):
    """The connection closed (or could not be used). Every pending call fails with it at once.

    ``close_code`` / ``close_reason`` are the WebSocket close frame's, when one was received;
    ``cause_error`` is the connection-scoped protocol error the server sent before closing
    (e.g. :class:`UnauthorizedError`, :class:`TooLargeError`), if any. Sessions never survive a
    dropped connection: reconnect with a new client and ``make`` again.
    """

    code = "CONNECTION_CLOSED"
    default_retryable = True
    default_scope = "connection"

    def __init__(
        self,
        message: str = "connection closed",
        *,
        close_code: int | None = None,
        close_reason: str = "",
        cause_error: SandgymError | None = None,
    ) -> None:
        details: dict[str, Any] = {}
        if close_code is not None:
            details["close_code"] = close_code
        if close_reason:
            details["close_reason"] = close_reason
        super().__init__(message, details=details)
        self.close_code = close_code
        self.close_reason = close_reason
        self.cause_error = cause_error


class RequestTimeoutError(SandgymError, builtins.TimeoutError):
    """The client-side per-request timeout expired before the reply arrived.

    The request id stays reserved until the late reply comes and is then dropped, so no later call
    can read this call's answer. The server may still apply the request: for ``step`` the session
    state is unknown, so reset it (or close it) before stepping again.
    """

    code = "REQUEST_TIMEOUT"
    default_retryable = True
    default_scope = "request"


# --------------------------------------------------------------------------------------------
# The registry: generated from protocol/schema/errors.json (never edited by hand).


from ._errors_generated import ERRORS as _GENERATED  # noqa: E402  (generated from errors.json)

#: code -> {retryable, scope, close_code, message}; generated from protocol/schema/errors.json.
REGISTRY: dict[str, dict[str, Any]] = {str(k): dict(v) for k, v in _GENERATED.items()}


def class_name_for_code(code: str) -> str:
    """The documented exception class name for a protocol code (see module docstring)."""
    parts = code.lower().split("_")
    if parts and parts[-1] == "error":
        parts = parts[:-1]
    name = "".join(p.capitalize() for p in parts) + "Error"
    if hasattr(builtins, name):
        name = "Server" + name
    return name


ERROR_CLASSES: dict[str, type[SandgymError]] = {}


def _make_class(code: str, entry: Mapping[str, Any]) -> type[SandgymError]:
    doc = str(entry.get("description") or f"Protocol error {code}.")
    attrs: dict[str, Any] = {
        "code": code,
        "default_retryable": bool(entry.get("retryable", False)),
        "default_scope": str(entry.get("scope", "request")),
        "close_code": entry.get("close_code"),
        "__doc__": f"``{code}``: {doc}",
        "__module__": __name__,
    }
    return type(class_name_for_code(code), (SandgymError,), attrs)


for _code, _entry in REGISTRY.items():
    _cls = _make_class(_code, _entry)
    ERROR_CLASSES[_code] = _cls
    globals()[_cls.__name__] = _cls
    __all__.append(_cls.__name__)  # noqa: PYI056 - the classes are made from the registry at import


def error_from_wire(error: Any) -> SandgymError:
    """Map a wire error object ``{code, message, retryable, scope, details?}`` to an exception.

    Unknown codes (a newer server) become a plain :class:`SandgymError` carrying the code.
    """
    if not isinstance(error, Mapping):
        return SandgymError(f"malformed error object: {error!r}", code="INTERNAL")
    code = str(error.get("code", "INTERNAL"))
    cls = ERROR_CLASSES.get(code, SandgymError)
    details = error.get("details")
    retryable = error.get("retryable")
    scope = error.get("scope")
    return cls(
        str(error.get("message", "")),
        code=code,
        details=details if isinstance(details, Mapping) else None,
        retryable=bool(retryable) if isinstance(retryable, bool) else None,
        scope=str(scope) if isinstance(scope, str) else None,
    )


if TYPE_CHECKING:  # static names for type checkers; a test checks they match the generated map

    class ParseError(SandgymError): ...

    class InvalidMessageError(SandgymError): ...

    class HandshakeRequiredError(SandgymError): ...

    class UnsupportedVersionError(SandgymError): ...

    class UnknownTypeError(SandgymError): ...

    class UnsupportedError(SandgymError): ...

    class UnknownEnvError(SandgymError): ...

    class UnknownSessionError(SandgymError): ...

    class InvalidArgumentError(SandgymError): ...

    class InvalidActionError(SandgymError): ...

    class ResetNeededError(SandgymError): ...

    class CapacityError(SandgymError): ...

    class ServerTimeoutError(SandgymError): ...

    class EnvError(SandgymError): ...

    class SandboxError(SandgymError): ...

    class PreemptedError(SandgymError): ...

    class UnauthorizedError(SandgymError): ...

    class TooLargeError(SandgymError): ...

    class ConnectionTimeoutError(SandgymError): ...

    class ResumeExpiredError(SandgymError): ...

    class ResumeRefusedError(SandgymError): ...

    class ShuttingDownError(SandgymError): ...

    class InternalError(SandgymError): ...
