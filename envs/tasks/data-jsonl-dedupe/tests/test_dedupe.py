import json

from sandgym_harness import workspace


def go(lines, key="id"):
    tmp = workspace.tmpdir()
    src = tmp + "/in.jsonl"
    workspace.write_file(src, "\n".join(lines) + "\n")
    out = tmp + "/out.jsonl"
    r = workspace.run(["python3", "dedupe.py", src, out, "--key", key], timeout=30)
    assert r.exit_code == 0, "python3 dedupe.py should exit 0"
    rows = [json.loads(l) for l in workspace.read_text(out).splitlines() if l.strip()]
    return r, rows, tmp + "/out.jsonl.rejected"


def test_latest_wins():
    r, rows, rej = go(['{"id": 1, "v": "a", "updated_at": "2024-01-01T00:00:00Z"}',
                       '{"id": 1, "v": "b", "updated_at": "2024-02-01T00:00:00Z"}',
                       '{"id": 2, "v": "c", "updated_at": "2024-01-05T00:00:00Z"}'])
    assert rows == [{"id": 1, "v": "b", "updated_at": "2024-02-01T00:00:00Z"},
                    {"id": 2, "v": "c", "updated_at": "2024-01-05T00:00:00Z"}]
    assert r.stdout.strip() == "kept 2 rejected 0"
    assert not workspace.exists(rej)


def test_offsets_compared_as_instants():
    _, rows, _ = go(['{"id": "x", "v": 1, "updated_at": "2024-01-01T10:00:00+02:00"}',
                     '{"id": "x", "v": 2, "updated_at": "2024-01-01T09:00:00Z"}'])
    assert [r["v"] for r in rows] == [2]


def test_tie_keeps_later():
    _, rows, _ = go(['{"id": 1, "v": 1, "updated_at": "2024-01-01T00:00:00Z"}',
                     '{"id": 1, "v": 2, "updated_at": "2024-01-01T00:00:00+00:00"}'])
    assert [r["v"] for r in rows] == [2]


def test_order_by_kept_position():
    _, rows, _ = go(['{"id": "a", "v": 1, "updated_at": "2024-01-03T00:00:00Z"}',
                     '{"id": "b", "v": 2, "updated_at": "2024-01-01T00:00:00Z"}',
                     '{"id": "a", "v": 3, "updated_at": "2024-01-04T00:00:00Z"}'])
    assert [r["v"] for r in rows] == [2, 3]


def test_rejected():
    bad = ['not json', '[1, 2]', '{"v": 1, "updated_at": "2024-01-01T00:00:00Z"}', '{"id": 5, "updated_at": "yesterday"}']
    r, rows, rej = go(['', '{"id": 1, "updated_at": "2024-01-01T00:00:00Z"}', *bad, ''])
    assert len(rows) == 1
    assert workspace.read_text(rej).splitlines() == bad
    assert r.stdout.strip() == "kept 1 rejected 4"


def test_other_key_field():
    _, rows, _ = go(['{"email": "a@x", "updated_at": "2024-01-01T00:00:00Z", "n": 1}',
                     '{"email": "a@x", "updated_at": "2023-01-01T00:00:00Z", "n": 2}'], key="email")
    assert [r["n"] for r in rows] == [1]


def test_timestamp_without_offset_is_utc():
    _, rows, _ = go(['{"id": 1, "v": 1, "updated_at": "2024-01-01T10:00:00"}',
                     '{"id": 1, "v": 2, "updated_at": "2024-01-01T11:30:00+01:00"}',
                     '{"id": 2, "v": 3, "updated_at": "2024-01-01T10:00:00+01:00"}',
                     '{"id": 2, "v": 4, "updated_at": "2024-01-01T09:30:00"}'])
    assert [r["v"] for r in rows] == [2, 4]


def test_key_values_compared_as_json_values():
    # equal objects match whatever their key order; 1 and "1" are different values
    r, rows, _ = go(['{"id": {"a": 1, "b": 2}, "v": 1, "updated_at": "2024-01-01T00:00:00Z"}',
                     '{"id": 1, "v": 2, "updated_at": "2024-01-01T00:00:00Z"}',
                     '{"id": "1", "v": 3, "updated_at": "2024-01-01T00:00:00Z"}',
                     '{"id": {"b": 2, "a": 1}, "v": 4, "updated_at": "2024-01-02T00:00:00Z"}'])
    assert [r["v"] for r in rows] == [2, 3, 4]
    assert r.stdout.strip() == "kept 3 rejected 0"


def test_missing_or_non_string_updated_at_rejected():
    bad = ['{"id": 6, "updated_at": 20240101}', '{"id": 7}', '{"id": 8, "updated_at": null}',
           '{"id": 9, "updated_at": ["2024-01-01T00:00:00Z"]}']
    r, rows, rej = go(['{"id": 6, "updated_at": "2024-01-01T00:00:00Z"}', *bad])
    assert [row["id"] for row in rows] == [6]
    assert workspace.read_text(rej).splitlines() == bad
    assert r.stdout.strip() == "kept 1 rejected 4"


def test_usage_error_without_key():
    tmp = workspace.tmpdir()
    workspace.write_file(tmp + "/in.jsonl", '{"id": 1, "updated_at": "2024-01-01T00:00:00Z"}\n')
    for args in [[tmp + "/in.jsonl", tmp + "/out.jsonl"], []]:
        r = workspace.run(["python3", "dedupe.py", *args], timeout=30)
        assert r.exit_code == 2, "a call without the two paths and --key must exit 2"
