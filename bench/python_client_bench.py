#!/usr/bin/env python3
"""Python client benchmark: step round trip (async and sync) against a bare websockets baseline, and
async throughput with 256 concurrent episodes on test/noop-v0.

Two servers run as separate processes:
* a *stub* server (this file with --stub-server: Python websockets) that answers every frame with a
  canned reply carrying the request's id. A bare ``websockets`` client and the sandgym clients both
  talk to it, so the difference between their round trips is what the client itself costs;
* the real sandgym server (``node bin/sandgym.js serve --fixtures``) for end-to-end figures.

The sync ``Client`` runs on ``websockets.sync`` (no asyncio), so it is also compared with a bare client of
that API; the issue's target (client adds <= 50%) is measured against the bare asyncio client.

Prints a markdown table and writes bench/results/python.json.

    python bench/python_client_bench.py [--steps 3000] [--episodes 256] [--url ws://...]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
STEP_RESULT = {"observation": 0, "reward": 0, "terminated": False, "truncated": False, "info": {}}


# ------------------------------------------------------------------------------ stub server


async def stub_server() -> None:
    import msgpack
    from websockets.asyncio.server import serve

    from sandgym._core import PROTOCOL_VERSION

    hello = {"version": PROTOCOL_VERSION, "server": {"name": "stub", "version": "0"}, "capabilities": {"batch": True, "msgpack": True, "pipelining": True, "tool_call": True},
             "limits": {"max_message_bytes": 16777216, "max_sessions": 100000, "max_batch": 1024, "step_timeout_ms": 60000, "idle_timeout_ms": 900000}}
    spec = {"id": "stub/noop-v0", "description": "", "observation_space": {"type": "discrete", "n": 2},
            "action_space": {"type": "discrete", "n": 2}, "max_episode_steps": None, "reward_range": [0, 0], "stochastic": False}
    results = {"hello": hello, "make": {"session": "s-1", "env_spec": spec}, "reset": {"observation": 0, "info": {}},
               "step": STEP_RESULT, "close": {}, "ping": {}}

    async def handler(ws: Any) -> None:
        async for data in ws:
            binary = isinstance(data, bytes)
            msg = msgpack.unpackb(data) if binary else json.loads(data)
            reply = {"id": msg.get("id"), "type": "result", "result": results.get(msg.get("type"), {})}
            await ws.send(msgpack.packb(reply) if binary else json.dumps(reply, separators=(",", ":")))

    async with serve(handler, "127.0.0.1", 0, compression=None, max_size=None) as server:
        port = server.sockets[0].getsockname()[1]
        print(f"stub listening on ws://127.0.0.1:{port}/", flush=True)
        await asyncio.Future()


def start_process(args: list[str], pattern: str, timeout: float = 90) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(args, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        m = re.search(pattern, line)
        if m:
            return proc, m.group(1)
    proc.kill()
    raise RuntimeError(f"{args[0]} did not start")


# ------------------------------------------------------------------------------ measurements


def summarize(samples: list[float]) -> dict[str, Any]:
    s = sorted(samples)
    return {
        "median_us": round(statistics.median(s) * 1e6, 1),
        "p99_us": round(s[min(len(s) - 1, int(len(s) * 0.99))] * 1e6, 1),
        "mean_us": round(statistics.fmean(s) * 1e6, 1),
    }


class _Round:
    """Holds every client open and measures them in interleaved rounds, so that load changes on a
    shared machine hit all of them alike (medians over all rounds)."""

    def __init__(self, stub_url: str, node_url: str, encoding: str) -> None:
        import msgpack
        from websockets.asyncio.client import connect
        from websockets.sync.client import connect as sync_connect

        import sandgym

        self.enc = encoding
        self.loop = asyncio.new_event_loop()
        run = self.loop.run_until_complete
        self.pack = (lambda f: msgpack.packb(f)) if encoding == "msgpack" else (lambda f: json.dumps(f, separators=(",", ":")))
        self.unpack = msgpack.unpackb if encoding == "msgpack" else json.loads
        self.bare = run(connect(stub_url, compression=None, max_size=None))
        self._bare_sync_cm = sync_connect(stub_url, compression=None, max_size=None)
        self.bare_sync = self._bare_sync_cm.__enter__()
        self.clients: list[Any] = []
        self.aenvs: dict[str, Any] = {}
        self.senvs: dict[str, Any] = {}
        for label, url, env_id in (("stub", stub_url, "stub/noop-v0"), ("node", node_url, "test/noop-v0")):
            ac = run(sandgym.AsyncClient.connect(url, encoding=encoding))
            env = run(ac.make(env_id))
            run(env.reset())
            self.aenvs[label] = env
            sc = sandgym.Client(url, encoding=encoding)
            senv = sc.make(env_id)
            senv.reset()
            self.senvs[label] = senv
            self.clients += [ac, sc]
        self.samples: dict[str, list[float]] = {}
        self.cpu: dict[str, list[float]] = {}  # client-process CPU seconds per step (all threads)
        self._id = 0

    def _add(self, key: str, xs: list[float], cpu: float) -> None:
        self.samples.setdefault(key, []).extend(xs)
        self.cpu.setdefault(key, []).append(cpu / max(1, len(xs)))

    def _timed(self, key: str, fn: Any) -> None:
        c0 = time.process_time()
        xs = fn()
        self._add(key, xs, time.process_time() - c0)

    def round(self, k: int) -> None:
        async def bare_async() -> list[float]:
            out = []
            for _ in range(k):
                self._id += 1
                data = self.pack({"id": self._id, "type": "step", "session": "s-1", "action": 1})
                t0 = time.perf_counter()
                await self.bare.send(data)
                self.unpack(await self.bare.recv())
                out.append(time.perf_counter() - t0)
            return out

        async def sg_async(env: Any) -> list[float]:
            out = []
            for _ in range(k):
                t0 = time.perf_counter()
                await env.step(0)
                out.append(time.perf_counter() - t0)
            return out

        def bare_sync() -> list[float]:
            out = []
            for _ in range(k):
                self._id += 1
                data = self.pack({"id": self._id, "type": "step", "session": "s-1", "action": 1})
                t0 = time.perf_counter()
                self.bare_sync.send(data)
                self.unpack(self.bare_sync.recv())
                out.append(time.perf_counter() - t0)
            return out

        def sg_sync(env: Any) -> list[float]:
            out = []
            for _ in range(k):
                t0 = time.perf_counter()
                env.step(0)
                out.append(time.perf_counter() - t0)
            return out

        run = self.loop.run_until_complete
        self._timed("stub/bare websockets (asyncio)", lambda: run(bare_async()))
        self._timed("stub/bare websockets (sync API)", bare_sync)
        self._timed("stub/sandgym async", lambda: run(sg_async(self.aenvs["stub"])))
        self._timed("stub/sandgym sync", lambda: sg_sync(self.senvs["stub"]))
        self._timed("sandgym (node)/sandgym async", lambda: run(sg_async(self.aenvs["node"])))
        self._timed("sandgym (node)/sandgym sync", lambda: sg_sync(self.senvs["node"]))

    def close(self) -> None:
        run = self.loop.run_until_complete
        for c in self.clients:
            res = c.close()
            if asyncio.iscoroutine(res):
                run(res)
        run(self.bare.close())
        self._bare_sync_cm.__exit__(None, None, None)
        self.loop.close()


def measure_rtts(stub_url: str, node_url: str, encoding: str, n: int, warmup: int, rounds: int = 10) -> list[dict[str, Any]]:
    r = _Round(stub_url, node_url, encoding)
    try:
        r.round(max(1, warmup // 6))
        r.samples.clear()
        r.cpu.clear()
        for _ in range(rounds):
            r.round(max(1, n // rounds))
    finally:
        r.close()
    bare = summarize(r.samples["stub/bare websockets (asyncio)"])
    bare_sync = summarize(r.samples["stub/bare websockets (sync API)"])
    rows = []
    for key, xs in r.samples.items():
        server, client = key.split("/", 1)
        row: dict[str, Any] = {"server": server, "encoding": encoding, "client": client, **summarize(xs),
                               "client_cpu_us_per_step": round(statistics.median(r.cpu[key]) * 1e6, 1)}
        if server == "stub" and "asyncio" not in client:
            row["overhead_vs_bare"] = round(row["median_us"] / bare["median_us"] - 1, 3)
        if server == "stub" and client.startswith("sandgym"):
            # the same websockets API underneath: asyncio for the async client, websockets.sync for Client
            same = bare_sync if client == "sandgym sync" else bare
            row["overhead_vs_bare_same_api"] = round(row["median_us"] / same["median_us"] - 1, 3)
        rows.append(row)
    return rows


async def throughput(url: str, episodes: int, steps_per_episode: int, encoding: str) -> dict[str, float]:
    import sandgym

    async with await sandgym.AsyncClient.connect(url, encoding=encoding) as client:
        envs = await asyncio.gather(*(client.make("test/noop-v0") for _ in range(episodes)))
        await asyncio.gather(*(e.reset() for e in envs))

        async def run(e: Any) -> None:
            for _ in range(steps_per_episode):
                await e.step(0)

        t0 = time.perf_counter()
        await asyncio.gather(*(run(e) for e in envs))
        elapsed = time.perf_counter() - t0
        await asyncio.gather(*(e.close() for e in envs))
    total = episodes * steps_per_episode
    return {"episodes": episodes, "steps": total, "seconds": round(elapsed, 3), "steps_per_s": round(total / elapsed, 1)}


# ------------------------------------------------------------------------------ main


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--stub-server", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--steps", type=int, default=3000, help="round trips per latency measurement")
    ap.add_argument("--warmup", type=int, default=300)
    ap.add_argument("--episodes", type=int, default=256)
    ap.add_argument("--episode-steps", type=int, default=40)
    ap.add_argument("--url", default=None, help="use this sandgym server (with --fixtures) instead of starting one")
    ap.add_argument("--out", default=str(REPO / "bench" / "results" / "python.json"))
    args = ap.parse_args()
    if args.stub_server:
        asyncio.run(stub_server())
        return 0

    procs: list[subprocess.Popen[str]] = []
    try:
        stub, stub_url = start_process([sys.executable, __file__, "--stub-server"], r"stub listening on (ws://\S+)")
        procs.append(stub)
        url = args.url
        if url is None:
            node = os.environ.get("SANDGYM_NODE", "node").split()
            srv, url = start_process([*node, "bin/sandgym.js", "serve", "--host", "127.0.0.1", "--port", "0", "--fixtures",
                                      "--log-level", "warn", "--driver", "none"], r"sandgym listening on (ws://\S+)")
            procs.append(srv)
        n, w = args.steps, args.warmup
        rows: list[dict[str, Any]] = []
        for enc in ("json", "msgpack"):
            rows += measure_rtts(stub_url, url, enc, n, w)
        tput = {enc: asyncio.run(throughput(url, args.episodes, args.episode_steps, enc)) for enc in ("json", "msgpack")}
    finally:
        for p in procs:
            p.terminate()
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()

    import websockets

    import sandgym

    result = {
        "benchmark": "python-client",
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {"python": platform.python_version(), "platform": platform.platform(), "cpus": os.cpu_count(),
                    "load_avg_1m": os.getloadavg()[0] if hasattr(os, "getloadavg") else None},
        "versions": {"sandgym": sandgym.__version__, "websockets": websockets.__version__},
        "round_trips": n,
        "step_rtt": rows,
        "throughput": tput,
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"## Python client (median of {n} step round trips per client, measured in 10 interleaved rounds after warm-up; {os.cpu_count()} cores, load avg {load:.1f})\n")
    print("overhead vs bare = median / median of the bare asyncio websockets client on the same stub server - 1 "
          "(the issue's target: <= +50%); vs bare same API = against the bare client of the websockets API the "
          "sandgym client uses (asyncio for AsyncClient, websockets.sync for Client); "
          "client CPU = CPU time of this process (all its threads) per step, median over rounds\n")
    print("| server | encoding | client | median µs | p99 µs | overhead vs bare | vs bare same API | client CPU µs/step |")
    print("|---|---|---|---:|---:|---:|---:|---:|")
    pct = lambda v: "" if v is None else f"{v:+.0%}"  # noqa: E731
    for r in rows:
        print(f"| {r['server']} | {r['encoding']} | {r['client']} | {r['median_us']} | {r['p99_us']} | "
              f"{pct(r.get('overhead_vs_bare'))} | {pct(r.get('overhead_vs_bare_same_api'))} | {r['client_cpu_us_per_step']} |")
    print(f"\n## Async throughput: {args.episodes} concurrent episodes x {args.episode_steps} steps on test/noop-v0, one connection\n")
    print("| encoding | steps | seconds | steps/s |")
    print("|---|---:|---:|---:|")
    for enc, t in tput.items():
        print(f"| {enc} | {t['steps']} | {t['seconds']} | {t['steps_per_s']} |")
    print(f"\nwritten: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
