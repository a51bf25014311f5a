"""Offline replay of the shared protocol vectors (protocol/vectors): codec, spaces, schema.

The TypeScript suite replays the same files; a vector one client passes and the other fails is a bug
in one of them. Transcripts (live) are in test_transcripts.py; schema vectors over a live socket in
test_schema_live.py.
"""

from __future__ import annotations

import json
import math

import pytest
from jsonschema import Draft202012Validator
from referencing import Registry, Resource

from _server import REPO
from conftest import VECTORS, load_vectors
from sandgym import codec
from sandgym._core import PROTOCOL_VERSION
from sandgym.spaces import check_space, to_gym_space, validate_space_definition

CODEC = json.loads((VECTORS / "codec" / "codec.json").read_text("utf-8"))
SPACES = json.loads((VECTORS / "spaces" / "spaces.json").read_text("utf-8"))
SCHEMA_FILES = load_vectors("schema")


def _same(a, b) -> bool:
    """Protocol value equality: numbers by value (1 == 1.0), no bool/number mixing."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def test_vector_files_exist():
    assert CODEC["cases"] and CODEC["refused"] and CODEC["decode_only"]
    assert SPACES["cases"] and SPACES["invalid_spaces"]
    assert len(SCHEMA_FILES) >= 5


# ------------------------------------------------------------------------------ codec


@pytest.mark.parametrize("case", CODEC["cases"], ids=lambda c: c["name"])
def test_codec_case(case):
    value = case["value"]
    if "json" in case:
        assert codec.encode_json(value) == case["json"]  # byte-exact (str == UTF-8 bytes)
        assert _same(codec.decode_json(case["json"], strict=True), value)
        assert _same(codec.decode_json(case["json"].encode("utf-8"), strict=True), value)
    if "msgpack" in case:
        assert codec.encode_msgpack(value).hex() == case["msgpack"]
        assert _same(codec.decode_msgpack(bytes.fromhex(case["msgpack"]), strict=True), value)


@pytest.mark.parametrize("case", CODEC["decode_only"], ids=lambda c: c["name"])
def test_codec_decode_only(case):
    if "json" in case:
        got = codec.decode_json(case["json"], strict=True)
    else:
        got = codec.decode_msgpack(bytes.fromhex(case["msgpack"]), strict=True)
    assert _same(got, case["value"]), got


@pytest.mark.parametrize("case", CODEC["refused"], ids=lambda c: f"{c['encoding']}: {c['name']}")
def test_codec_refused(case):
    if "hex" in case:
        data: str | bytes = bytes.fromhex(case["hex"])
    else:
        data = case["text"]
    with pytest.raises(codec.DecodeError) as ei:
        if case["encoding"] == "json":
            codec.decode_json(data, strict=True, max_bytes=case.get("max_bytes"))
        else:
            codec.decode_msgpack(
                bytes(data) if isinstance(data, bytes) else data.encode(), strict=True, max_bytes=case.get("max_bytes")
            )
    assert ei.value.code == case["error"]


# ------------------------------------------------------------------------------ spaces


def _space_samples():
    for case in SPACES["cases"]:
        for i, sample in enumerate(case["samples"]):
            yield pytest.param(case["space"], sample, id=f"{case['name']}#{i}")


@pytest.mark.parametrize("space,sample", list(_space_samples()))
def test_space_sample(space, sample):
    issue = check_space(space, sample["value"])
    if sample["valid"]:
        assert issue is None, (sample, issue)
    else:
        assert issue is not None, sample
        if "path" in sample:
            assert issue["path"] == sample["path"], (sample, issue)


@pytest.mark.parametrize("case", SPACES["cases"], ids=lambda c: c["name"])
def test_valid_space_definitions_convert(case):
    assert validate_space_definition(case["space"]) is None
    to_gym_space(case["space"])


@pytest.mark.parametrize("case", SPACES["invalid_spaces"], ids=lambda c: c["name"])
def test_invalid_space_definition(case):
    issue = validate_space_definition(case["space"])
    assert issue is not None
    if "path" in case:
        assert issue["path"] == case["path"], issue
    with pytest.raises(ValueError):
        to_gym_space(case["space"])


# ------------------------------------------------------------------------------ schema (jsonschema)


def _registry() -> Registry:
    resources = []
    for path in sorted((REPO / "protocol" / "schema").glob("*.json")):
        doc = json.loads(path.read_text("utf-8"))
        if "$id" in doc:
            resources.append((doc["$id"], Resource.from_contents(doc)))
    return Registry().with_resources(resources)


REGISTRY = _registry()
# The client's major is the schemas' major: their $ids carry it.
PREFIX = f"https://sandgym.dev/protocol/v{PROTOCOL_VERSION}/"


def test_schema_ids_carry_the_clients_protocol_version():
    ids = [
        doc["$id"]
        for path in sorted((REPO / "protocol" / "schema").glob("*.json"))
        for doc in [json.loads(path.read_text("utf-8"))]
    ]
    assert ids and all(i.startswith(PREFIX) for i in ids), ids


def _validator(name: str) -> Draft202012Validator:
    return Draft202012Validator({"$ref": PREFIX + name}, registry=REGISTRY)


REQUEST = _validator("request.json")
SERVER = _validator("server-message.json")


def _schema_cases():
    for file_id, doc in SCHEMA_FILES:
        for case in doc["cases"]:
            yield pytest.param(doc.get("direction", "request"), case, id=f"{file_id}: {case['name']}")


@pytest.mark.parametrize("direction,case", list(_schema_cases()))
def test_schema_vector(direction, case):
    if "raw_json" in case:
        with pytest.raises(codec.DecodeError) as ei:
            codec.decode_json(case["raw_json"], strict=True)
        assert ei.value.code == case["error"]
        return
    if "raw_msgpack_hex" in case:
        with pytest.raises(codec.DecodeError) as ei:
            codec.decode_msgpack(bytes.fromhex(case["raw_msgpack_hex"]), strict=True)
        assert ei.value.code == case["error"]
        return
    frame = case["frame"]
    if direction == "request":
        ok = REQUEST.is_valid(frame)
    else:
        ok = SERVER.is_valid(frame)
        op = case.get("op")
        if ok and op:
            result_schema = _validator(f"result-{op.replace('_', '-')}.json")
            ok = result_schema.is_valid(frame.get("result"))
    assert ok is case["valid"], (
        case,
        [e.message for e in (REQUEST if direction == "request" else SERVER).iter_errors(frame)][:3],
    )


def test_float_formatting_is_in_vectors():
    # Sanity: the vectors exercise the JS number formatting paths we care about.
    floats = [c["value"] for c in CODEC["cases"] if isinstance(c["value"], float)]
    assert any(abs(f) < 1e-6 for f in floats if f != 0) and all(math.isfinite(f) for f in floats)
