"""bench/python_gym_vec_bench.py still runs (tiny setting; the real figures come from `npm run bench`)."""

from __future__ import annotations

import json
import subprocess
import sys

from _server import REPO


def test_gym_vec_bench_smoke(tmp_path, url):
    out = tmp_path / "gym_vec.json"
    proc = subprocess.run(
        [
            sys.executable,
            str(REPO / "bench" / "python_gym_vec_bench.py"),
            "--num-envs",
            "2",
            "--seconds",
            "0.2",
            "--rounds",
            "1",
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
    data = json.loads(out.read_text())
    got = {(r["env_id"], r["vectoriser"]) for r in data["rows"]}
    assert got == {(e, v) for e in ("wordle-v0", "math-v0") for v in ("SyncVectorEnv", "AsyncVectorEnv", "make_vec")}
    assert all(r["steps_per_s"] > 0 for r in data["rows"])
    assert set(data["ratios"]) == {"wordle-v0", "math-v0"} and "| wordle-v0 | make_vec |" in proc.stdout
