#!/usr/bin/env python3
"""The peer benchmark (`npm run bench:peers`): sandgym against OpenEnv (openenv-core, pinned in
bench/peers/requirements.txt) with raw WebSocket echo servers as floors, all in ONE run through ONE load
generator (this process: Python asyncio + websockets speaking each raw protocol, no client library).

Servers, each its own process:
* sandgym: ``node bin/sandgym.js serve --fixtures --driver none``, env ``test/noop-v0`` (the desync check
  uses ``test/slow-v0``);
* OpenEnv: ``uvicorn server.app:app`` (one worker, as its template's Dockerfile runs it) serving
  bench/peers/openenv_counter, a counter env in ``openenv init``'s template style;
* floors: a raw Node ``ws`` echo (bench/lib/echo-server.mjs) and a raw Python ``websockets`` echo
  (bench/peers/echo_server.py), answering sandgym's step frame unchanged.

Measured, in interleaved rounds (each round visits every server, in a rotating order, so load drift on a
shared machine hits all alike):
* sequential round trip p50/p95 (one connection, one request in flight);
* steps/s at 1/16/64/256 concurrent sessions, one connection per session (OpenEnv's model: its connection
  is its session), each session a closed loop; with server CPU per step (/proc/PID/stat: user+system of
  every thread) and the CPU share of the server and of the load generator, to tell which one saturated:
  a load generator near a whole core while its server is not is reported as *load-generator-bound*
  (the server could go faster than shown);
* memory per idle session (measured first, on fresh servers): RSS growth of the server over N idle
  sessions, one connection each (for sandgym also all N on one connection);
* the timeout desync check: the client times out on a slow step and sends its next request; is the next
  frame it reads matched to its request by id, or is it the previous call's late answer (shifted)?

Writes bench/results/peers.json and prints a markdown table with ratios. Asserts nothing.

    python bench/peers/peers_bench.py [--quick] [--levels 1,16,64,256] [--rounds 5] [--duration 1.5]
                                      [--idle 2000] [--seq 500]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from websockets.asyncio.client import ClientConnection, connect

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
RESULTS = REPO / "bench" / "results" / "peers.json"
CLK_TCK = os.sysconf("SC_CLK_TCK")
# A load generator whose CPU share is at least this while its server's is below it is the bottleneck.
SATURATED = 0.85
SERVER_START_TIMEOUT_S = 600  # OpenEnv imports gradio and fastmcp: ~90 s measured at load average 30


# ------------------------------------------------------------------------------------------ processes


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a whole process (every thread), from /proc/PID/stat."""
    with open(f"/proc/{pid}/stat") as f:
        stat = f.read()
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def rss_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        m = re.search(r"VmRSS:\s+(\d+)\s+kB", f.read())
    if not m:
        raise RuntimeError(f"no VmRSS for pid {pid}")
    return int(m.group(1)) * 1024


@dataclass
class Server:
    name: str
    proc: subprocess.Popen[bytes]
    url: str
    log: Path
    started_s: float = 0.0

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def spawn(name: str, args: list[str], tmp: Path, cwd: Path = REPO, env: dict[str, str] | None = None,
          pass_fds: tuple[int, ...] = ()) -> tuple[subprocess.Popen[bytes], Path]:
    log = tmp / f"{name}.log"
    out = open(log, "wb")  # noqa: SIM115 - the child owns it
    proc = subprocess.Popen(args, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            env={**os.environ, **(env or {})}, pass_fds=pass_fds)
    out.close()
    return proc, log


@dataclass
class Starting:
    """A server process spawned but maybe not ready yet: all four start at once (OpenEnv's imports take
    minutes on a busy machine), then wait_all() waits for them together."""

    name: str
    proc: subprocess.Popen[bytes]
    log: Path
    pattern: str
    url: str | None = None
    t0: float = field(default_factory=time.monotonic)

    def poll(self) -> Server | None:
        """The server once its ready line is in its log (None before); raises if it exited."""
        m = re.search(self.pattern, self.log.read_text(errors="replace"))
        if m:
            return Server(self.name, self.proc, self.url or m.group(1), self.log, time.monotonic() - self.t0)
        if self.proc.poll() is not None:
            raise RuntimeError(f"{self.proc.args} exited with {self.proc.returncode}:\n{self.log.read_text(errors='replace')[-4000:]}")
        return None


def wait_all(starting: dict[str, Starting], timeout: float) -> dict[str, Server]:
    """Waits for every server at once, so each one's start-up time is its own."""
    ready: dict[str, Server] = {}
    deadline = time.monotonic() + timeout
    while len(ready) < len(starting):
        for k, st in starting.items():
            if k not in ready and (server := st.poll()):
                ready[k] = server
        if len(ready) < len(starting):
            if time.monotonic() > deadline:
                late = [st for k, st in starting.items() if k not in ready]
                raise RuntimeError(f"not ready within {timeout} s: {', '.join(str(st.proc.args) for st in late)}:\n"
                                   + "\n".join(st.log.read_text(errors="replace")[-2000:] for st in late))
            time.sleep(0.05)
    return ready


def start_sandgym(tmp: Path) -> Starting:
    # One connection per session needs more connections from one address than the defaults allow
    # (256 per address); the N-sessions-on-one-connection memory figure needs more sessions per connection.
    config = tmp / "sandgym.json"
    config.write_text(json.dumps({"max_connections": 20000, "max_connections_per_address": 20000,
                                  "max_pending_handshakes": 20000, "max_sessions": 50000,
                                  "max_sessions_per_connection": 20000}))
    proc, log = spawn("sandgym", ["node", "bin/sandgym.js", "serve", "--port", "0", "--fixtures", "--driver", "none",
                                  "--log-level", "warn", "--config", str(config)], tmp)
    return Starting("sandgym", proc, log, r"sandgym listening on (ws://\S+)")


def start_node_echo(tmp: Path) -> Starting:
    proc, log = spawn("node-echo", ["node", "bench/lib/echo-server.mjs"], tmp)
    return Starting("node ws echo", proc, log, r"echo listening on (ws://\S+)")


def start_python_echo(tmp: Path) -> Starting:
    proc, log = spawn("python-echo", [sys.executable, str(HERE / "echo_server.py")], tmp)
    return Starting("python websockets echo", proc, log, r"echo listening on (ws://\S+)")


def start_openenv(tmp: Path, max_sessions: int) -> Starting:
    # The listening socket is bound here and handed to uvicorn (--fd): no port race, and the URL is known.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(4096)
    port = sock.getsockname()[1]
    proc, log = spawn("openenv", [sys.executable, "-m", "uvicorn", "server.app:app", "--fd", str(sock.fileno()),
                                  "--workers", "1", "--log-level", "info", "--no-access-log"],
                      tmp, cwd=HERE / "openenv_counter", env={"PEERS_MAX_SESSIONS": str(max_sessions)},
                      pass_fds=(sock.fileno(),))
    sock.close()
    return Starting("OpenEnv", proc, log, r"(Application startup complete)", f"ws://127.0.0.1:{port}/ws")


# ------------------------------------------------------------------------------------------ protocols


def dumps(v: Any) -> str:
    return json.dumps(v, separators=(",", ":"))


class Session:
    """One session on its own connection, speaking one raw protocol. ``step()`` sends one step frame,
    reads one reply and checks it: a wrong reply raises (a benchmark of errors measures nothing)."""

    ws: ClientConnection

    async def step(self) -> None:
        raise NotImplementedError

    async def close(self) -> None:
        await self.ws.close()


class SandgymSession(Session):
    def __init__(self, ws: ClientConnection, session: str, next_id: int) -> None:
        self.ws, self.session, self.id = ws, session, next_id

    @staticmethod
    async def handshake(ws: ClientConnection, version: int) -> None:
        await ws.send(dumps({"id": 0, "type": "hello", "versions": [version], "client": {"name": "peers-bench", "version": "0"}}))
        reply = json.loads(await ws.recv())
        if reply.get("type") != "result":
            raise RuntimeError(f"hello failed: {reply}")

    @staticmethod
    async def make(ws: ClientConnection, first_id: int, env_id: str = "test/noop-v0", kwargs: dict[str, Any] | None = None) -> str:
        make: dict[str, Any] = {"id": first_id, "type": "make", "env_id": env_id}
        if kwargs:
            make["kwargs"] = kwargs
        await ws.send(dumps(make))
        made = json.loads(await ws.recv())
        if made.get("type") != "result":
            raise RuntimeError(f"make failed: {made}")
        session = str(made["result"]["session"])
        await ws.send(dumps({"id": first_id + 1, "type": "reset", "session": session}))
        reset = json.loads(await ws.recv())
        if reset.get("type") != "result":
            raise RuntimeError(f"reset failed: {reset}")
        return session

    @classmethod
    async def open(cls, url: str, env_id: str = "test/noop-v0", kwargs: dict[str, Any] | None = None) -> SandgymSession:
        m = re.search(r"/v(\d+)/ws", url)
        if not m:
            raise RuntimeError(f"cannot read the protocol version from {url}")
        ws = await connect(url, compression=None, max_size=None, ping_interval=None)
        await cls.handshake(ws, int(m.group(1)))
        return cls(ws, await cls.make(ws, 1, env_id, kwargs), 3)

    async def step(self) -> None:
        self.id += 1
        await self.ws.send(dumps({"id": self.id, "type": "step", "session": self.session, "action": 0}))
        reply = json.loads(await self.ws.recv())
        if reply.get("id") != self.id or reply.get("type") != "result":
            raise RuntimeError(f"sandgym step {self.id}: {reply}")


class OpenEnvSession(Session):
    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws

    @classmethod
    async def open(cls, url: str) -> OpenEnvSession:
        ws = await connect(url, compression=None, max_size=None, ping_interval=None)
        await ws.send(dumps({"type": "reset", "data": {}}))
        reply = json.loads(await ws.recv())
        if reply.get("type") != "observation":
            raise RuntimeError(f"OpenEnv reset failed: {reply}")
        return cls(ws)

    async def step(self) -> None:
        await self.ws.send(dumps({"type": "step", "data": {"increment": 1}}))
        reply = json.loads(await self.ws.recv())
        if reply.get("type") != "observation":
            raise RuntimeError(f"OpenEnv step: {reply}")


class EchoSession(Session):
    """The floor: sandgym's step frame, sent back unchanged."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws, self.id = ws, 0

    @classmethod
    async def open(cls, url: str) -> EchoSession:
        return cls(await connect(url, compression=None, max_size=None, ping_interval=None))

    async def step(self) -> None:
        self.id += 1
        await self.ws.send(dumps({"id": self.id, "type": "step", "session": "s-echo", "action": 0}))
        reply = json.loads(await self.ws.recv())
        if reply.get("id") != self.id:
            raise RuntimeError(f"echo: {reply}")


@dataclass
class Target:
    key: str
    server: Server
    kind: str  # sandgym | openenv | echo

    async def open(self) -> Session:
        if self.kind == "sandgym":
            return await SandgymSession.open(self.server.url)
        if self.kind == "openenv":
            return await OpenEnvSession.open(self.server.url)
        return await EchoSession.open(self.server.url)

    async def open_many(self, n: int, parallel: int = 32) -> list[Session]:
        sem = asyncio.Semaphore(parallel)

        async def one() -> Session:
            async with sem:
                return await self.open()

        return list(await asyncio.gather(*(one() for _ in range(n))))


async def close_all(sessions: list[Session]) -> None:
    await asyncio.gather(*(s.close() for s in sessions), return_exceptions=True)


# ------------------------------------------------------------------------------------------ phases


def pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(len(s) * q))]


@dataclass
class Meter:
    """Wall time, server CPU and load-generator CPU over one measured stretch."""

    pid: int
    wall0: float = field(default_factory=time.perf_counter)
    self0: float = field(default_factory=time.process_time)
    server0: float = 0.0

    def __post_init__(self) -> None:
        self.server0 = cpu_seconds(self.pid)

    def stop(self) -> tuple[float, float, float]:
        return time.perf_counter() - self.wall0, cpu_seconds(self.pid) - self.server0, time.process_time() - self.self0


async def phase_sequential(targets: list[Target], per_round: int, rounds: int, warmup: int) -> dict[str, Any]:
    sessions = {t.key: await t.open() for t in targets}
    for t in targets:
        for _ in range(warmup):
            await sessions[t.key].step()
    samples: dict[str, list[float]] = {t.key: [] for t in targets}
    cpu: dict[str, float] = {t.key: 0.0 for t in targets}
    for r in range(rounds):
        order = targets[r % len(targets) :] + targets[: r % len(targets)]
        for t in order:
            s = sessions[t.key]
            out = samples[t.key]
            meter = Meter(t.server.pid)
            for _ in range(per_round):
                t0 = time.perf_counter()
                await s.step()
                out.append(time.perf_counter() - t0)
            cpu[t.key] += meter.stop()[1]
    await close_all(list(sessions.values()))
    return {
        k: {"n": len(xs), "p50_us": round(statistics.median(xs) * 1e6, 1), "p95_us": round(pct(xs, 0.95) * 1e6, 1),
            "server_cpu_us_per_step": round(cpu[k] / len(xs) * 1e6, 1)}
        for k, xs in samples.items()
    }


async def closed_loop(sessions: list[Session], seconds: float) -> int:
    end = time.perf_counter() + seconds
    counts = [0] * len(sessions)

    async def worker(i: int, s: Session) -> None:
        n = 0
        while time.perf_counter() < end:
            await s.step()
            n += 1
        counts[i] = n

    await asyncio.gather(*(worker(i, s) for i, s in enumerate(sessions)))
    return sum(counts)


async def phase_throughput(targets: list[Target], levels: list[int], rounds: int, seconds: float) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for c in levels:
        print(f"[peers] throughput: {c} concurrent sessions", file=sys.stderr, flush=True)
        sessions = {t.key: await t.open_many(c) for t in targets}
        for t in targets:  # warm-up: JIT, socket buffers, executor threads
            await closed_loop(sessions[t.key], min(0.5, seconds))
        per: dict[str, list[dict[str, float]]] = {t.key: [] for t in targets}
        for r in range(rounds):
            order = targets[r % len(targets) :] + targets[: r % len(targets)]
            for t in order:
                meter = Meter(t.server.pid)
                steps = await closed_loop(sessions[t.key], seconds)
                wall, server_cpu, self_cpu = meter.stop()
                per[t.key].append({"steps_per_s": steps / wall, "server_cpu_us_per_step": server_cpu / max(1, steps) * 1e6,
                                   "server_cpu_share": server_cpu / wall, "loadgen_cpu_share": self_cpu / wall})
        for t in targets:
            await close_all(sessions[t.key])
        level: dict[str, Any] = {}
        for k, rs in per.items():
            med = {m: statistics.median(r[m] for r in rs) for m in rs[0]}
            bound = "loadgen" if med["loadgen_cpu_share"] >= SATURATED and med["server_cpu_share"] < SATURATED else (
                "server" if med["server_cpu_share"] >= SATURATED else "neither")
            level[k] = {"steps_per_s": round(med["steps_per_s"]), "server_cpu_us_per_step": round(med["server_cpu_us_per_step"], 1),
                        "server_cpu_share": round(med["server_cpu_share"], 2), "loadgen_cpu_share": round(med["loadgen_cpu_share"], 2),
                        "bound": bound, "rounds": [{m: round(v, 2) for m, v in r.items()} for r in rs]}
        out[str(c)] = level
    return out


async def phase_memory(targets: list[Target], n: int) -> dict[str, Any]:
    out: dict[str, Any] = {}

    async def settle(pid: int) -> int:
        await asyncio.sleep(2.0)
        return rss_bytes(pid)

    for t in targets:
        # Warm-up: a fresh server's start-up garbage is collected during the first sessions, which would shrink
        # RSS while idle sessions are counted (a negative figure in a trial run); open and close some first.
        await close_all(await t.open_many(min(n, 200)))
        if t.kind == "sandgym":
            # sandgym multiplexes sessions: all n on one connection as well (first, while the heap is small).
            m = re.search(r"/v(\d+)/ws", t.server.url)
            ws = await connect(t.server.url, compression=None, max_size=None, ping_interval=None)
            await SandgymSession.handshake(ws, int(m.group(1)) if m else 2)
            before = await settle(t.server.pid)
            for i in range(n):
                await SandgymSession.make(ws, 10 + 2 * i)
            after = await settle(t.server.pid)
            await ws.close()
            out[f"{t.key} (one connection)"] = {"sessions": n, "connections": 1, "rss_before_mib": round(before / 2**20, 1),
                                                "rss_after_mib": round(after / 2**20, 1), "bytes_per_session": round((after - before) / n)}
        print(f"[peers] memory: {n} idle sessions on {t.key}", file=sys.stderr, flush=True)
        before = await settle(t.server.pid)
        sessions = await t.open_many(n)
        after = await settle(t.server.pid)
        await close_all(sessions)
        out[t.key] = {"sessions": n, "connections": n, "rss_before_mib": round(before / 2**20, 1),
                      "rss_after_mib": round(after / 2**20, 1), "bytes_per_session": round((after - before) / n)}
    return out


async def desync_sandgym(url: str, delay_s: float, timeout_s: float) -> dict[str, Any]:
    s = await SandgymSession.open(url, "test/slow-v0", {"delay_ms": int(delay_s * 1000)})
    first, second = 100, 101
    await s.ws.send(dumps({"id": first, "type": "step", "session": s.session, "action": 0}))
    timed_out = False
    try:
        early = json.loads(await asyncio.wait_for(s.ws.recv(), timeout_s))
    except TimeoutError:
        timed_out = True
        early = None
    await s.ws.send(dumps({"id": second, "type": "step", "session": s.session, "action": 0}))
    next_frame = json.loads(await asyncio.wait_for(s.ws.recv(), 10 * delay_s + 5))
    frames = [next_frame]
    while frames[-1].get("id") != second:
        frames.append(json.loads(await asyncio.wait_for(s.ws.recv(), 10 * delay_s + 5)))
    await s.close()
    # The frame read after the second request answers the first (late) one, but says so by its id: a client
    # matching by id drops it and gets the second request's own reply.
    matched = next_frame.get("id") in (first, second) and frames[-1].get("id") == second
    return {"client_timed_out": timed_out, "early_reply": early, "next_frame_id": next_frame.get("id"),
            "frames_ids": [f.get("id") for f in frames],
            "verdict": "matched by id" if timed_out and matched else ("no timeout happened" if not timed_out else "shifted")}


async def desync_openenv(url: str, delay_s: float, timeout_s: float) -> dict[str, Any]:
    s = await OpenEnvSession.open(url)
    await s.ws.send(dumps({"type": "step", "data": {"increment": 1, "delay_s": delay_s}}))  # answer: count 1
    timed_out = False
    try:
        early = json.loads(await asyncio.wait_for(s.ws.recv(), timeout_s))
    except TimeoutError:
        timed_out = True
        early = None
    await s.ws.send(dumps({"type": "step", "data": {"increment": 10}}))  # answer: count 11
    next_frame = json.loads(await asyncio.wait_for(s.ws.recv(), 10 * delay_s + 5))
    count = next_frame.get("data", {}).get("observation", {}).get("count")
    has_id = any(k in next_frame for k in ("id", "request_id"))
    await s.close()
    if not timed_out:
        verdict = "no timeout happened"
    elif count == 1 and not has_id:
        verdict = "shifted (desync): the reply read for request 2 is request 1's, with nothing to tell them apart"
    elif count == 11:
        verdict = "matched"
    else:
        verdict = f"unexpected: {next_frame}"
    return {"client_timed_out": timed_out, "early_reply": early, "next_frame_count": count, "expected_count": 11,
            "next_frame_has_id": has_id, "verdict": verdict}


# ------------------------------------------------------------------------------------------ report


def ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if b else "-"


def report(res: dict[str, Any]) -> str:
    sg, oe, ne, pe = "sandgym", "OpenEnv", "node ws echo", "python websockets echo"
    seq = res["sequential"]
    lines = [
        (f"Peers (OpenEnv {res['openenv_version']}) {res['machine']['date']}, load average {res['machine']['loadavg_start']}"
         f" -> {res['machine']['loadavg_end']} ({res['machine']['cpus']} CPUs); command: {res['command']}"),
        "",
        f"| figure | {sg} | {oe} | OpenEnv / sandgym | {ne} | {pe} | sandgym / node echo | OpenEnv / python echo |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for q in ("p50_us", "p95_us"):
        lines.append(f"| sequential step round trip {q[:3]} (µs) | {seq[sg][q]} | {seq[oe][q]} | {ratio(seq[oe][q], seq[sg][q])} | "
                     f"{seq[ne][q]} | {seq[pe][q]} | {ratio(seq[sg][q], seq[ne][q])} | {ratio(seq[oe][q], seq[pe][q])} |")
    q = "server_cpu_us_per_step"
    lines.append(f"| server CPU per sequential step (µs) | {seq[sg][q]} | {seq[oe][q]} | {ratio(seq[oe][q], seq[sg][q])} | "
                 f"{seq[ne][q]} | {seq[pe][q]} | {ratio(seq[sg][q], seq[ne][q])} | {ratio(seq[oe][q], seq[pe][q])} |")
    for c, level in res["throughput"].items():
        g = {k: level[k] for k in (sg, oe, ne, pe)}
        lines.append(f"| steps/s, {c} sessions (bound: {g[sg]['bound']} / {g[oe]['bound']}) | {g[sg]['steps_per_s']:,} | {g[oe]['steps_per_s']:,} | "
                     f"sandgym {ratio(g[sg]['steps_per_s'], g[oe]['steps_per_s'])} | {g[ne]['steps_per_s']:,} | {g[pe]['steps_per_s']:,} | "
                     f"{ratio(g[sg]['steps_per_s'], g[ne]['steps_per_s'])} | {ratio(g[oe]['steps_per_s'], g[pe]['steps_per_s'])} |")
        lines.append(f"| server CPU per step, {c} sessions (µs) | {g[sg][q]} | {g[oe][q]} | {ratio(g[oe][q], g[sg][q])} | "
                     f"{g[ne][q]} | {g[pe][q]} | {ratio(g[sg][q], g[ne][q])} | {ratio(g[oe][q], g[pe][q])} |")
    mem = res["memory"]
    b = "bytes_per_session"
    def per(k: str) -> str:
        # RSS can fall while sessions are counted (a garbage collection returned pages): no figure then.
        v = mem[k][b]
        return f"{v:,}" if v > 0 else f"n/a (RSS fell by {-v:,} per session: a GC)"

    lines.append(f"| memory per idle session, {mem[sg]['sessions']:,} sessions, one connection each (bytes) | {per(sg)} | {per(oe)} | "
                 f"{ratio(mem[oe][b], mem[sg][b]) if min(mem[oe][b], mem[sg][b]) > 0 else '-'} | {per(ne)} | {per(pe)} | - | - |")
    if f"{sg} (one connection)" in mem:
        lines.append(f"| memory per idle session, all on one connection (bytes) | {per(f'{sg} (one connection)')} | (no multiplexing) | | | | | |")
    d = res["desync"]
    lines.append(f"| client times out, sends the next request | {d[sg]['verdict']} | {d[oe]['verdict']} | | | | | |")
    lines.append("")
    lines.append("Bound (sandgym / OpenEnv): which process used >= 85% of a core in the median round: the server, the load")
    lines.append("generator (loadgen), or neither (the machine's other work took the cores). A loadgen-bound steps/s is a floor.")
    for c, level in res["throughput"].items():
        for k, v in level.items():
            if v["bound"] == "loadgen":
                lines.append(f"- LOAD GENERATOR SATURATED at {c} sessions on {k}: load generator {v['loadgen_cpu_share']:.0%} of a core, "
                             f"server {v['server_cpu_share']:.0%}: the server could do more than {v['steps_per_s']:,} steps/s.")
    lines.append("Server start-up to ready (s, all four started at once): " + ", ".join(f"{k} {v}" for k, v in res["startup_s"].items()))
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------ main


async def run(args: argparse.Namespace, servers: dict[str, Server]) -> dict[str, Any]:
    targets = [Target("sandgym", servers["sandgym"], "sandgym"), Target("OpenEnv", servers["openenv"], "openenv"),
               Target("node ws echo", servers["node"], "echo"), Target("python websockets echo", servers["python"], "echo")]
    # Memory first: on fresh servers, before the load phases leave garbage whose collection would shrink RSS
    # while idle sessions are being counted.
    mem = await phase_memory(targets, args.idle)
    print("[peers] sequential round trips", file=sys.stderr, flush=True)
    seq = await phase_sequential(targets, args.seq, args.rounds * 2, max(50, args.seq // 5))
    thr = await phase_throughput(targets, args.levels, args.rounds, args.duration)
    print("[peers] timeout desync check", file=sys.stderr, flush=True)
    desync = {"sandgym": await desync_sandgym(servers["sandgym"].url, 0.4, 0.1),
              "OpenEnv": await desync_openenv(servers["openenv"].url, 0.4, 0.1)}
    return {"sequential": seq, "throughput": thr, "memory": mem, "desync": desync}


def level_list(text: str) -> list[int]:
    try:
        levels = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"a comma-separated list of integers >= 1, got {text!r}") from None
    if not levels or any(n < 1 for n in levels):
        raise argparse.ArgumentTypeError(f"a comma-separated list of integers >= 1, got {text!r}")
    return levels


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="smoke run: tiny phases, levels 1,16 (well under a minute of load)")
    p.add_argument("--levels", type=level_list, default=[1, 16, 64, 256], help="concurrent sessions (one connection each) to measure steps/s at")
    p.add_argument("--rounds", type=int, default=5, help="interleaved rounds per throughput level (sequential: twice as many)")
    p.add_argument("--duration", type=float, default=1.5, help="seconds per server per throughput round")
    p.add_argument("--seq", type=int, default=500, help="sequential round trips per server per round")
    p.add_argument("--idle", type=int, default=2000, help="idle sessions for the memory figure")
    p.add_argument("--out", default=str(RESULTS), help="where the JSON results go")
    args = p.parse_args()
    if args.quick:
        args.levels, args.rounds, args.duration, args.seq, args.idle = [1, 16], 1, 0.5, 100, 100
    if args.rounds < 1 or args.duration <= 0 or args.seq < 1 or args.idle < 1:
        p.error("rounds, seq and idle must be >= 1 and duration > 0")

    from importlib.metadata import version

    load_start = os.getloadavg()[0]
    servers: dict[str, Server] = {}
    with tempfile.TemporaryDirectory(prefix="sandgym-peers-") as d:
        tmp = Path(d)
        try:
            print("[peers] starting servers (OpenEnv's import takes a while on a busy machine)", file=sys.stderr, flush=True)
            starting = {"openenv": start_openenv(tmp, max(args.idle, max(args.levels)) + 64), "sandgym": start_sandgym(tmp),
                        "node": start_node_echo(tmp), "python": start_python_echo(tmp)}
            try:
                servers.update(wait_all(starting, SERVER_START_TIMEOUT_S))
            except BaseException:
                for st in starting.values():
                    if st.proc.poll() is None:
                        st.proc.kill()
                        st.proc.wait()
                raise
            res = asyncio.run(run(args, servers))
        finally:
            for s in servers.values():
                s.stop()
    out: dict[str, Any] = {
        "command": "npm run bench:peers" + (" -- --quick" if args.quick else ""),
        "openenv_version": version("openenv-core"),
        "websockets_version": version("websockets"),
        "uvicorn_version": version("uvicorn"),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "node": subprocess.run(["node", "--version"], check=False, capture_output=True, text=True).stdout.strip(),
                    "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "loadavg_start": round(load_start, 1),
                    "loadavg_end": round(os.getloadavg()[0], 1)},
        "params": {"levels": args.levels, "rounds": args.rounds, "duration_s": args.duration, "seq_per_round": args.seq, "idle_sessions": args.idle,
                   "saturated_share": SATURATED},
        "startup_s": {k: round(s.started_s, 1) for k, s in servers.items()},
        **res,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    print(report(out))
    print(f"\n[peers] results in {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
