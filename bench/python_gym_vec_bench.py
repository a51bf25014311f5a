#!/usr/bin/env python3
"""Gymnasium vector envs over sandgym: ``sandgym.gym.make_vec`` against gymnasium's own
``SyncVectorEnv`` and ``AsyncVectorEnv`` over ``sandgym.gym.make``, in the same run, on the same server.

* ``SyncVectorEnv``: N single envs, each with its own connection, stepped one after another
  (N round trips per vector step);
* ``AsyncVectorEnv`` (default arguments: shared memory, one worker process per sub-env): N round
  trips in parallel, plus the pipes and shared memory between the processes;
* ``make_vec``: N sessions on one connection, one ``batch`` frame per vector step.

Each sub-env gets a fixed, valid action (wordle: a guess, math: an answer), so every step is a real
env step; env steps are counted as ``gymnasium.utils.performance.benchmark_vector_step`` counts them
(with NEXT_STEP autoreset the step that only resets a sub-env is not an env step). After an untimed
warm-up of each, the three vectorisers are measured in interleaved rounds (the machine is shared);
the table shows the median round. Prints a markdown table and writes bench/results/python_gym_vec.json.

    python bench/python_gym_vec_bench.py [--num-envs 8] [--seconds 3] [--rounds 3] [--url ws://...]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from functools import partial
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
# measure this tree's client, not whatever sandgym the venv installed last (AsyncVectorEnv's workers
# are forked, so they inherit the path)
sys.path.insert(0, str(REPO / "clients" / "python" / "src"))
ENVS = {"wordle-v0": "crane", "math-v0": "42"}


def start_server() -> tuple[subprocess.Popen[str], str]:
    node = os.environ.get("SANDGYM_NODE", "node").split()
    args = [*node, str(REPO / "bin" / "sandgym.js"), "serve", "--host", "127.0.0.1", "--port", "0",
            "--driver", "none", "--log-level", "warn"]
    proc = subprocess.Popen(args, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        m = re.search(r"sandgym listening on (ws://\S+)", line)
        if m:
            return proc, m.group(1)
    proc.kill()
    raise RuntimeError("sandgym server did not start")


def build(kind: str, url: str, env_id: str, n: int) -> Any:
    import gymnasium

    import sandgym.gym

    if kind == "make_vec":
        return sandgym.gym.make_vec(url, env_id, n)
    fns = [partial(sandgym.gym.make, url, env_id) for _ in range(n)]
    if kind == "SyncVectorEnv":
        return gymnasium.vector.SyncVectorEnv(fns)
    return gymnasium.vector.AsyncVectorEnv(fns)


def measure(envs: Any, action: str, seconds: float) -> tuple[float, int]:
    """Env steps per second for ``seconds`` (after a warm-up), counted as gymnasium counts them."""
    import numpy as np

    n = envs.num_envs
    actions = (action,) * n
    envs.reset(seed=0)
    for _ in range(3):
        envs.step(actions)
    envs.reset(seed=1)
    previous_done = np.zeros(n, dtype=np.bool_)
    steps = 0
    start = time.perf_counter()
    while True:
        _obs, _rew, term, trunc, _info = envs.step(actions)
        steps += n - int(np.count_nonzero(previous_done))
        previous_done = np.logical_or(term, trunc)
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return steps / elapsed, steps


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--num-envs", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=3.0, help="measurement time per vectoriser per round")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--envs", default=",".join(ENVS), help="comma-separated env ids (wordle-v0, math-v0)")
    ap.add_argument("--url", default=None, help="use this sandgym server instead of starting one")
    ap.add_argument("--out", default=str(REPO / "bench" / "results" / "python_gym_vec.json"))
    args = ap.parse_args()

    import gymnasium

    proc = None
    url = args.url
    if url is None:
        proc, url = start_server()
    kinds = ["SyncVectorEnv", "AsyncVectorEnv", "make_vec"]
    rows: list[dict[str, Any]] = []
    try:
        for env_id in args.envs.split(","):
            for kind in kinds:  # untimed: the server's first episodes of an env (JIT, word lists) count for none
                envs = build(kind, url, env_id, args.num_envs)
                try:
                    measure(envs, ENVS[env_id], min(args.seconds, 1.0))
                finally:
                    envs.close()
            per_kind: dict[str, list[float]] = {k: [] for k in kinds}
            build_s: dict[str, list[float]] = {k: [] for k in kinds}
            for _ in range(args.rounds):
                for kind in kinds:  # interleaved: a slow phase of the machine hits all three alike
                    t0 = time.perf_counter()
                    envs = build(kind, url, env_id, args.num_envs)
                    build_s[kind].append(time.perf_counter() - t0)
                    try:
                        rate, _steps = measure(envs, ENVS[env_id], args.seconds)
                    finally:
                        envs.close()
                    per_kind[kind].append(rate)
            for kind in kinds:
                rows.append({
                    "env_id": env_id, "vectoriser": kind, "num_envs": args.num_envs,
                    "steps_per_s": statistics.median(per_kind[kind]), "rounds": per_kind[kind],
                    "construct_s": statistics.median(build_s[kind]),
                })
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(10)

    # Ratios are taken within each round (the three ran back to back there), then the median: on a
    # shared machine the load moves between rounds far more than between neighbours in one round.
    ratios: dict[str, dict[str, Any]] = {}
    for env_id in args.envs.split(","):
        per = {k: next(r["rounds"] for r in rows if r["env_id"] == env_id and r["vectoriser"] == k) for k in kinds}
        vs_sync = [v / b for v, b in zip(per["make_vec"], per["SyncVectorEnv"], strict=True)]
        vs_async = [v / b for v, b in zip(per["make_vec"], per["AsyncVectorEnv"], strict=True)]
        async_vs_sync = [v / b for v, b in zip(per["AsyncVectorEnv"], per["SyncVectorEnv"], strict=True)]
        ratios[env_id] = {
            "make_vec_vs_sync": statistics.median(vs_sync), "make_vec_vs_sync_range": [min(vs_sync), max(vs_sync)],
            "make_vec_vs_async": statistics.median(vs_async), "make_vec_vs_async_range": [min(vs_async), max(vs_async)],
            "async_vs_sync": statistics.median(async_vs_sync),
        }
    print(f"\n### gymnasium vector envs over sandgym ({args.num_envs} sub-envs, {args.rounds} interleaved rounds of {args.seconds:g} s)\n")
    print("| env | vectoriser | env steps/s (median round) | rounds | construct (s) |")
    print("|---|---|---:|---|---:|")
    for r in rows:
        each = ", ".join(f"{x:,.0f}" for x in r["rounds"])
        print(f"| {r['env_id']} | {r['vectoriser']} | {r['steps_per_s']:,.0f} | {each} | {r['construct_s']:.2f} |")
    print("\n| env | make_vec / SyncVectorEnv | make_vec / AsyncVectorEnv | AsyncVectorEnv / SyncVectorEnv |")
    print("|---|---:|---:|---:|")
    for env_id, rr in ratios.items():
        s_lo, s_hi = rr["make_vec_vs_sync_range"]
        a_lo, a_hi = rr["make_vec_vs_async_range"]
        print(f"| {env_id} | {rr['make_vec_vs_sync']:.1f}x ({s_lo:.1f}-{s_hi:.1f}) | {rr['make_vec_vs_async']:.1f}x ({a_lo:.1f}-{a_hi:.1f}) | {rr['async_vs_sync']:.2f}x |")
    print("\n(ratios: median of the per-round ratios, range in parentheses)")
    result = {
        "command": "python bench/python_gym_vec_bench.py " + " ".join(sys.argv[1:]),
        "python": platform.python_version(), "gymnasium": gymnasium.__version__, "cpus": os.cpu_count(),
        "num_envs": args.num_envs, "seconds": args.seconds, "rounds": args.rounds, "rows": rows, "ratios": ratios,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(f"\nwritten: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
