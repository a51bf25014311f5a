"""bench/python_client_bench.py still runs (tiny setting; the real figures come from `npm run bench`)."""

from __future__ import annotations

import json
import subprocess
import sys

from _server import REPO


def test_bench_smoke(tmp_path, url):
    out = tmp_path / "python.json"
    proc = subprocess.run(
        [
            sys.executable,
            str(REPO / "bench" / "python_client_bench.py"),
            "--steps",
            "40",
            "--warmup",
            "12",
            "--episodes",
            "8",
            "--episode-steps",
            "3",
            "--url",
            url,
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "| stub | json | sandgym async |" in proc.stdout
    data = json.loads(out.read_text())
    clients = {(r["server"], r["encoding"], r["client"]) for r in data["step_rtt"]}
    assert ("stub", "msgpack", "sandgym sync") in clients and ("sandgym (node)", "json", "sandgym async") in clients
    assert data["throughput"]["json"]["steps"] == 24
