import os
import pathlib

WS = pathlib.Path(os.environ.get("SANDGYM_WORKSPACE", os.getcwd()))

import json
import subprocess
import sys


def run(script, *args, stdin=None, cwd=None):
    return subprocess.run([sys.executable, str(WS / script), *map(str, args)], input=stdin,
                          capture_output=True, text=True, timeout=30, cwd=cwd)


def go(tmp_path, lines, key="id"):
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join(lines) + "\n")
    out = tmp_path / "out.jsonl"
    r = run("dedupe.py", src, out, "--key", key)
    assert r.returncode == 0, r.stderr
    rows = [json.loads(l) for l in out.read_text().splitlines() if l.strip()]
    return r, rows, tmp_path / "out.jsonl.rejected"


def test_latest_wins(tmp_path):
    r, rows, rej = go(tmp_path, ['{"id": 1, "v": "a", "updated_at": "2024-01-01T00:00:00Z"}',
                                 '{"id": 1, "v": "b", "updated_at": "2024-02-01T00:00:00Z"}',
                                 '{"id": 2, "v": "c", "updated_at": "2024-01-05T00:00:00Z"}'])
    assert rows == [{"id": 1, "v": "b", "updated_at": "2024-02-01T00:00:00Z"},
                    {"id": 2, "v": "c", "updated_at": "2024-01-05T00:00:00Z"}]
    assert r.stdout.strip() == "kept 2 rejected 0"
    assert not rej.exists()


def test_offsets_compared_as_instants(tmp_path):
    _, rows, _ = go(tmp_path, ['{"id": "x", "v": 1, "updated_at": "2024-01-01T10:00:00+02:00"}',
                               '{"id": "x", "v": 2, "updated_at": "2024-01-01T09:00:00Z"}'])
    assert [r["v"] for r in rows] == [2]


def test_tie_keeps_later(tmp_path):
    _, rows, _ = go(tmp_path, ['{"id": 1, "v": 1, "updated_at": "2024-01-01T00:00:00Z"}',
                               '{"id": 1, "v": 2, "updated_at": "2024-01-01T00:00:00+00:00"}'])
    assert [r["v"] for r in rows] == [2]


def test_order_by_kept_position(tmp_path):
    _, rows, _ = go(tmp_path, ['{"id": "a", "v": 1, "updated_at": "2024-01-03T00:00:00Z"}',
                               '{"id": "b", "v": 2, "updated_at": "2024-01-01T00:00:00Z"}',
                               '{"id": "a", "v": 3, "updated_at": "2024-01-04T00:00:00Z"}'])
    assert [r["v"] for r in rows] == [2, 3]


def test_rejected(tmp_path):
    bad = ['not json', '[1, 2]', '{"v": 1, "updated_at": "2024-01-01T00:00:00Z"}', '{"id": 5, "updated_at": "yesterday"}']
    r, rows, rej = go(tmp_path, ['', '{"id": 1, "updated_at": "2024-01-01T00:00:00Z"}', *bad, ''])
    assert len(rows) == 1
    assert rej.read_text().splitlines() == bad
    assert r.stdout.strip() == "kept 1 rejected 4"


def test_other_key_field(tmp_path):
    _, rows, _ = go(tmp_path, ['{"email": "a@x", "updated_at": "2024-01-01T00:00:00Z", "n": 1}',
                               '{"email": "a@x", "updated_at": "2023-01-01T00:00:00Z", "n": 2}'], key="email")
    assert [r["n"] for r in rows] == [1]
