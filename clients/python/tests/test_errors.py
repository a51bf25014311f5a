"""The exception classes follow the registry (protocol/schema/errors.json) and the naming rule."""

from __future__ import annotations

import builtins
import json

import sandgym
from _server import REPO
from sandgym import errors
from sandgym._errors_generated import ERRORS


def test_generated_map_matches_registry_json():
    registry = json.loads((REPO / "protocol" / "schema" / "errors.json").read_text())["codes"]
    assert list(ERRORS) == list(registry)
    for code, entry in registry.items():
        assert ERRORS[code]["retryable"] == entry["retryable"]
        assert ERRORS[code]["scope"] == entry["scope"]
        assert ERRORS[code].get("close_code") == entry.get("close_code")


def test_one_class_per_code_with_documented_names():
    expected = {
        "PARSE_ERROR": "ParseError",
        "INVALID_MESSAGE": "InvalidMessageError",
        "RESET_NEEDED": "ResetNeededError",
        "CAPACITY": "CapacityError",
        "TIMEOUT": "ServerTimeoutError",
        "ENV_ERROR": "EnvError",
        "SANDBOX_ERROR": "SandboxError",
        "UNAUTHORIZED": "UnauthorizedError",
        "TOO_LARGE": "TooLargeError",
        "SHUTTING_DOWN": "ShuttingDownError",
        "INTERNAL": "InternalError",
    }
    for code, name in expected.items():
        assert errors.class_name_for_code(code) == name
    for code, cls in errors.ERROR_CLASSES.items():
        assert cls.__name__ == errors.class_name_for_code(code)
        assert not hasattr(builtins, cls.__name__)
        assert issubclass(cls, sandgym.SandgymError)
        assert getattr(sandgym, cls.__name__) is cls  # exported at top level
        e = cls("boom")
        assert e.code == code
        assert e.retryable == ERRORS[code]["retryable"]
        assert e.scope == ERRORS[code]["scope"]
        assert e.details == {}


def test_client_side_errors():
    assert issubclass(sandgym.RequestTimeoutError, TimeoutError)
    assert issubclass(sandgym.ConnectionClosedError, ConnectionError)
    e = sandgym.ConnectionClosedError("x", close_code=1006)
    assert e.close_code == 1006 and e.details["close_code"] == 1006 and e.scope == "connection"


def test_error_to_wire_round_trip():
    e = sandgym.error_from_wire(
        {
            "code": "CAPACITY",
            "message": "full",
            "retryable": True,
            "scope": "request",
            "details": {"retry_after_ms": 25},
        }
    )
    assert isinstance(e, sandgym.CapacityError)
    assert sandgym.error_from_wire(e.to_wire()).to_wire() == e.to_wire()
    assert "CAPACITY" in str(e)


def test_static_names_match_generated_registry():
    """The TYPE_CHECKING stubs in errors.py and the explicit imports in __init__ follow the registry."""
    import ast
    import inspect

    expected = [cls.__name__ for cls in errors.ERROR_CLASSES.values()]
    tree = ast.parse(inspect.getsource(errors))
    stubs = [
        node.name
        for top in tree.body
        if isinstance(top, ast.If) and getattr(top.test, "id", None) == "TYPE_CHECKING"
        for node in top.body
        if isinstance(node, ast.ClassDef)
    ]
    assert stubs == expected
    exported = [n for n in sandgym.__all__ if n in expected]
    assert exported == expected
