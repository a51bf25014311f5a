"""Codec: unit tests, ECMAScript number formatting against node, hypothesis round trips."""

from __future__ import annotations

import json
import math
import shutil
import struct
import subprocess

import msgpack
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from sandgym import codec

SAFE = codec.MAX_SAFE_INTEGER

# The protocol's data model: null, bool, finite numbers, strings, arrays, string-keyed objects.
json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-SAFE, max_value=SAFE)
    | st.floats(allow_nan=False, allow_infinity=False).filter(lambda f: not (f.is_integer() and abs(f) > SAFE))
    | st.text()
)
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=5)
        | st.dictionaries(st.text(max_size=8).filter(lambda k: k != "__proto__"), children, max_size=5)
    ),
    max_leaves=25,
)


def _norm(v):
    """The value as the peer sees it: integral floats are integers (JavaScript numbers)."""
    if isinstance(v, float) and v.is_integer() and abs(v) <= SAFE:
        return int(v)
    if isinstance(v, list):
        return [_norm(x) for x in v]
    if isinstance(v, dict):
        return {k: _norm(x) for k, x in v.items()}
    return v


def _same(a, b) -> bool:
    if (
        isinstance(a, (int, float))
        and isinstance(b, (int, float))
        and not isinstance(a, bool)
        and not isinstance(b, bool)
    ):
        return a == b or (a == 0 and b == 0)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


@given(json_values)
@settings(max_examples=300, deadline=None)
def test_json_round_trip(v):
    text = codec.encode_json(v)
    assert isinstance(text, str)
    assert _same(codec.decode_json(text, strict=True), _norm(v))


@given(json_values)
@settings(max_examples=300, deadline=None)
def test_msgpack_round_trip(v):
    data = codec.encode_msgpack(v)
    assert isinstance(data, bytes)
    assert _same(codec.decode_msgpack(data, strict=True), _norm(v))


@given(json_values)
@settings(max_examples=200, deadline=None)
def test_both_encodings_carry_the_same_value(v):
    a = codec.decode_json(codec.encode_json(v))
    b = codec.decode_msgpack(codec.encode_msgpack(v))
    assert _same(a, b)


@given(st.floats(allow_nan=False, allow_infinity=False))
@settings(max_examples=300, deadline=None)
def test_js_number_round_trips(x):
    assert float(codec.js_number(x)) == x


def test_js_number_matches_node():
    node = shutil.which("node")
    assert node, "node is required (the server is node)"
    rng = np.random.default_rng(7)
    xs = [1e-7, 1e-6, 1.5e-5, 1e-4, 123.456, 1e16, 1.2345e20, 1e21, 1e300, -2.5e-300, 5e-324, 0.1, -0.0]
    xs += [struct.unpack("<d", rng.bytes(8))[0] for _ in range(3000)]
    xs += list(rng.normal(size=500) * 10.0 ** rng.integers(-25, 25, size=500))
    xs = [float(x) for x in xs if math.isfinite(x)]
    out = subprocess.run(
        [
            node,
            "-e",
            "const a=JSON.parse(require('fs').readFileSync(0,'utf8'));process.stdout.write(JSON.stringify(a.map(String)))",
        ],
        input=json.dumps(xs),
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    expected = json.loads(out)
    bad = [(x, e, codec.js_number(x)) for x, e in zip(xs, expected, strict=True) if e != codec.js_number(x)]
    assert not bad, bad[:5]


def test_lone_surrogates_escape_like_json_stringify():
    # A string a server sent may hold a lone surrogate ("\ud800" in its JSON): sending it back must work,
    # in the bytes Node's JSON.stringify writes, and msgpack (UTF-8 only) must refuse it with the typed error.
    value = {"a": "x\ud800\u00e9\U0001f600", "k\udfff": ["\udc00\ud83d", "plain"]}
    text = codec.encode_json(value)
    text.encode("utf-8")  # a valid text frame
    assert codec.decode(text) == value
    node = shutil.which("node")
    assert node, "node is required (the server is node)"
    out = subprocess.run(
        [node, "-e", "process.stdout.write(JSON.stringify(JSON.parse(require('fs').readFileSync(0,'utf8'))))"],
        input=text,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out == text
    with pytest.raises(codec.EncodeError, match="lone surrogate"):
        codec.encode_msgpack(value)


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, [1, math.nan], {"a": math.inf}, 2**53, -(2**60)])
@pytest.mark.parametrize("encoding", ["json", "msgpack"])
def test_refuses_nan_infinity_and_huge_ints(bad, encoding):
    with pytest.raises(codec.EncodeError):
        codec.encode(bad, encoding)


def test_refuses_non_string_keys_and_objects():
    with pytest.raises(codec.EncodeError):
        codec.encode_json({1: 2})
    with pytest.raises(codec.EncodeError):
        codec.encode_json(object())
    with pytest.raises(codec.EncodeError):
        codec.encode_json(b"bytes")


def test_json_refuses_integral_floats_beyond_2_53_below_1e21():
    with pytest.raises(codec.EncodeError):
        codec.encode_json(1e17)
    assert codec.encode_json(1e21) == "1e+21"
    assert codec.decode_msgpack(codec.encode_msgpack(1e17)) == 1e17


def test_numpy_arrays_and_scalars():
    assert codec.encode_json(np.array([[1.5, 2.0], [3.0, -0.25]], dtype=np.float32)) == "[[1.5,2],[3,-0.25]]"
    assert codec.encode_json(np.arange(3, dtype=np.uint8)) == "[0,1,2]"
    assert (
        codec.encode_json({"a": np.int64(7), "b": np.float64(0.5), "c": np.bool_(True)}) == '{"a":7,"b":0.5,"c":true}'
    )
    assert codec.encode_json(np.array(3.0)) == "3"
    assert codec.encode_json((1, np.int8(-2))) == "[1,-2]"
    assert codec.decode_msgpack(codec.encode_msgpack(np.eye(2))) == [[1, 0], [0, 1]]
    with pytest.raises(codec.EncodeError):
        codec.encode_json(np.array([1.0, np.nan]))
    with pytest.raises(codec.EncodeError):
        codec.encode_msgpack(np.float32(np.inf))
    # float32 values go out as the exact double they hold
    assert json.loads(codec.encode_json(np.float32(0.1))) == float(np.float32(0.1))


def test_json_bytes_match_json_stringify_shape():
    assert (
        codec.encode_json({"id": 1, "type": "step", "action": [1.0, "é\n\u2028"]})
        == '{"id":1,"type":"step","action":[1,"é\\n\u2028"]}'
    )


def test_msgpack_matches_server_integer_and_map_forms():
    # msgpackr: smallest int forms within 32 bits, float64 beyond; fixmap headers.
    assert codec.encode_msgpack(1) == b"\x01"
    assert codec.encode_msgpack(-1) == b"\xff"
    assert codec.encode_msgpack(255) == b"\xcc\xff"
    assert codec.encode_msgpack(2**32) == b"\xcb" + struct.pack(">d", 2.0**32)
    assert codec.encode_msgpack(-(2**31) - 1) == b"\xcb" + struct.pack(">d", -(2.0**31) - 1)
    assert codec.encode_msgpack(1.5) == b"\xcb" + struct.pack(">d", 1.5)
    assert codec.encode_msgpack({"a": 1}) == b"\x81\xa1a\x01"
    assert codec.encode_msgpack(2.0) == b"\x02"


@pytest.mark.parametrize(
    "text", ["{", "NaN", "[Infinity]", "[1e400]", "[9007199254740993]", '{"__proto__":1}', "[1] x"]
)
def test_strict_json_decode_refuses(text):
    with pytest.raises(codec.DecodeError):
        codec.decode_json(text, strict=True)


@pytest.mark.parametrize(
    "hexdata",
    [
        "",
        "c1",
        "c40100",
        "d40100",
        "81a16101ff",
        "cb7ff8000000000000",
        "cf0020000000000000",
        "8101a0",
        "a2c328",
        "9" + "1" * 1,
    ],
)
def test_strict_msgpack_decode_refuses(hexdata):
    with pytest.raises(codec.DecodeError):
        codec.decode_msgpack(bytes.fromhex(hexdata), strict=True)


def test_strict_msgpack_depth_limit():
    ok = b"\x91" * 511 + b"\x01"
    codec.decode_msgpack(ok, strict=True)
    with pytest.raises(codec.DecodeError):
        codec.decode_msgpack(b"\x91" * 513 + b"\x01", strict=True)


def test_msgpack_decoder_accepts_float32():
    assert codec.decode_msgpack(b"\xca" + struct.pack(">f", 0.5), strict=True) == 0.5


def test_python_msgpack_interop():
    v = {"k": [1, "x", None, True, 0.25]}
    assert msgpack.unpackb(codec.encode_msgpack(v)) == v


def test_both_encodings_decode_to_the_same_python_types():
    # msgpackr writes 2^32 and 2.0 as float64; JSON carries them as integers.
    assert type(codec.decode_msgpack(bytes.fromhex("cb41f0000000000000"))) is int
    assert codec.decode_msgpack(bytes.fromhex("92cb4000000000000000cb3ff8000000000000")) == [2, 1.5]
    assert type(codec.decode_msgpack(bytes.fromhex("92cb4000000000000000cb3ff8000000000000"))[0]) is int
    assert type(codec.decode_json("2")) is int
