"""The JSON Schema subset used by ``json`` and ``tool_call`` spaces, hand-written so that the client
needs no schema library: :func:`validate_json_schema` (values) and :func:`schema_problem`
(is a dict a schema at all).

Understood keywords: ``type``, ``enum``, ``const``, ``properties``, ``required``,
``additionalProperties``, ``patternProperties``, ``items``, ``prefixItems``, ``minItems``,
``maxItems``, ``uniqueItems``, ``minLength``, ``maxLength``, ``pattern``, ``minimum``, ``maximum``,
``exclusiveMinimum``, ``exclusiveMaximum``, ``multipleOf``, ``minProperties``, ``maxProperties``,
``allOf``, ``anyOf``, ``oneOf``, ``not``; unknown keywords are ignored. Keywords are checked in the
order of Ajv (the server's validator), so both report the same ``path``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from ._util import SAFE_INT, Issue, codepoints, int_in, is_integer, is_number, issue, ptr

__all__ = ["validate_json_schema", "schema_problem", "is_json_value"]

_JSON_TYPES = {"null", "boolean", "object", "array", "number", "string", "integer"}
_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")
_SCHEMA_ONE = (
    "items",
    "additionalProperties",
    "not",
    "contains",
    "propertyNames",
    "if",
    "then",
    "else",
    "unevaluatedProperties",
    "unevaluatedItems",
    "additionalItems",
)
_NUM_KW = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")
_COUNT_KW = ("minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties")


def schema_problem(schema: Any) -> bool:
    """True when ``schema`` is not a JSON Schema (structural check of the common keywords)."""
    if isinstance(schema, bool):
        return False
    if not isinstance(schema, dict):
        return True
    if "type" in schema:
        t = schema["type"]
        ts = t if isinstance(t, list) else [t]
        if not ts or not all(isinstance(x, str) and x in _JSON_TYPES for x in ts):
            return True
    for k in _SCHEMA_MAPS:
        if k in schema:
            m = schema[k]
            if not isinstance(m, dict) or any(schema_problem(v) for v in m.values()):
                return True
    for k in _SCHEMA_LISTS:
        if k in schema:
            lst = schema[k]
            if not isinstance(lst, list) or any(schema_problem(v) for v in lst):
                return True
    for k in _SCHEMA_ONE:
        if k in schema and schema_problem(schema[k]):
            return True
    if "required" in schema:
        r = schema["required"]
        if not isinstance(r, list) or not all(isinstance(x, str) for x in r):
            return True
    if "enum" in schema and not isinstance(schema["enum"], list):
        return True
    for k in _NUM_KW:
        if k in schema and not is_number(schema[k]):
            return True
    if "multipleOf" in schema and schema["multipleOf"] <= 0:
        return True
    for k in _COUNT_KW:
        if k in schema and not int_in(schema[k], 0, SAFE_INT):
            return True
    if "pattern" in schema:
        if not isinstance(schema["pattern"], str):
            return True
        try:
            re.compile(schema["pattern"])
        except re.error:
            return True
    return False


def is_json_value(v: Any) -> bool:
    t = type(v)
    if v is None or t in (bool, str, int):
        return True
    if t is float:
        return math.isfinite(v)
    if t is list:
        return all(is_json_value(x) for x in v)
    if t is dict:
        return all(type(k) is str and is_json_value(x) for k, x in v.items())
    return False


def _json_type_ok(t: str, v: Any) -> bool:
    if t == "null":
        return v is None
    if t == "boolean":
        return type(v) is bool
    if t == "string":
        return isinstance(v, str)
    if t == "integer":
        return is_integer(v)
    if t == "number":
        return is_number(v)
    if t == "array":
        return isinstance(v, list)
    if t == "object":
        return isinstance(v, dict)
    return False


def _json_equal(a: Any, b: Any) -> bool:
    if type(a) is bool or type(b) is bool:
        return type(a) is type(b) and a == b
    if is_number(a) and is_number(b):
        return bool(a == b)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_json_equal(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def validate_json_schema(schema: Any, value: Any, path: str = "") -> Issue:
    """Validate ``value`` against a JSON Schema (the subset in the module docstring)."""
    if schema is True or schema == {}:
        return None
    if schema is False:
        return issue(path, "no value is allowed here")
    if not isinstance(schema, Mapping):
        return None
    s = schema
    if "type" in s:
        types = s["type"] if isinstance(s["type"], list) else [s["type"]]
        if not any(_json_type_ok(t, value) for t in types):
            return issue(path, f"expected {' or '.join(types)}")
    if "const" in s and not _json_equal(s["const"], value):
        return issue(path, f"expected {s['const']!r}")
    if "enum" in s and not any(_json_equal(e, value) for e in s["enum"]):
        return issue(path, "value is not one of the allowed values")
    if isinstance(value, str):
        n = codepoints(value)
        if "minLength" in s and n < s["minLength"]:
            return issue(path, f"string is shorter than {s['minLength']}")
        if "maxLength" in s and n > s["maxLength"]:
            return issue(path, f"string is longer than {s['maxLength']}")
        if "pattern" in s and re.search(s["pattern"], value) is None:
            return issue(path, f"string does not match {s['pattern']!r}")
    if is_number(value) and type(value) is not bool:
        if "minimum" in s and value < s["minimum"]:
            return issue(path, f"must be >= {s['minimum']}")
        if "maximum" in s and value > s["maximum"]:
            return issue(path, f"must be <= {s['maximum']}")
        if "exclusiveMinimum" in s and value <= s["exclusiveMinimum"]:
            return issue(path, f"must be > {s['exclusiveMinimum']}")
        if "exclusiveMaximum" in s and value >= s["exclusiveMaximum"]:
            return issue(path, f"must be < {s['exclusiveMaximum']}")
        if "multipleOf" in s:
            q = value / s["multipleOf"]
            if not (math.isfinite(q) and abs(q - round(q)) < 1e-9):
                return issue(path, f"must be a multiple of {s['multipleOf']}")
    if isinstance(value, list):
        if "minItems" in s and len(value) < s["minItems"]:
            return issue(path, f"expected at least {s['minItems']} items")
        if "maxItems" in s and len(value) > s["maxItems"]:
            return issue(path, f"expected at most {s['maxItems']} items")
        if s.get("uniqueItems"):
            for i in range(len(value)):
                for j in range(i):
                    if _json_equal(value[i], value[j]):
                        return issue(ptr(path, i), "duplicate item")
        prefix = s.get("prefixItems") or []
        for i, x in enumerate(value):
            sub = prefix[i] if i < len(prefix) else s.get("items", True)
            if isinstance(sub, (Mapping, bool)):
                r = validate_json_schema(sub, x, ptr(path, i))
                if r:
                    return r
    if isinstance(value, dict):
        if "minProperties" in s and len(value) < s["minProperties"]:
            return issue(path, f"expected at least {s['minProperties']} properties")
        if "maxProperties" in s and len(value) > s["maxProperties"]:
            return issue(path, f"expected at most {s['maxProperties']} properties")
        for k in s.get("required", []):
            if k not in value:
                return issue(ptr(path, k), "missing required property")
        props = s.get("properties", {})
        pprops = s.get("patternProperties", {})
        addl = s.get("additionalProperties", True)
        # Same keyword order as Ajv (the server's validator): additionalProperties before properties.
        for k, x in value.items():
            if k in props or any(re.search(pat, k) for pat in pprops):
                continue
            if addl is False:
                return issue(ptr(path, k), "unexpected property")
            if isinstance(addl, Mapping):
                r = validate_json_schema(addl, x, ptr(path, k))
                if r:
                    return r
        for k, sub in props.items():
            if k in value:
                r = validate_json_schema(sub, value[k], ptr(path, k))
                if r:
                    return r
        for pat, sub in pprops.items():
            for k, x in value.items():
                if re.search(pat, k):
                    r = validate_json_schema(sub, x, ptr(path, k))
                    if r:
                        return r
    for sub in s.get("allOf", []):
        r = validate_json_schema(sub, value, path)
        if r:
            return r
    if "anyOf" in s and all(validate_json_schema(sub, value, path) for sub in s["anyOf"]):
        return issue(path, "value matches none of anyOf")
    if "oneOf" in s:
        ok = sum(1 for sub in s["oneOf"] if validate_json_schema(sub, value, path) is None)
        if ok != 1:
            return issue(path, f"value matches {ok} of oneOf (expected exactly 1)")
    if "not" in s and validate_json_schema(s["not"], value, path) is None:
        return issue(path, "value matches a schema under not")
    return None
