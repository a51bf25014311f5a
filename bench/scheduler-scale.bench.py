#!/usr/bin/env python3
"""Scheduling at scale (issue #18 item 5): N concurrent sandboxed ``shell-v0`` episodes (default 1,000)
on this machine, each doing real work, through the server's admission scheduler.

What it does:

* checks the host first (Docker answers, the busybox image exists, file and pid limits) and starts the
  real server (``node bin/sandgym.js serve --driver docker``) with a config that admits N sandboxes:
  ``pools.max_total`` = N, ``max_sessions`` > N, make/reset and idle deadlines long enough for N
  container starts (measured before: ~0.7 s each on this machine);
* opens ``--connections`` client connections (the asyncio Python client) and starts N episodes at once,
  round robin over the 8 shell-v0 tasks. Each episode: ``make``, ``reset`` (that takes a sandbox:
  admission), 5 commands, then waits at a barrier until every episode holds its sandbox (so all N
  sandboxes are alive at once, and memory is sampled then), 5 more commands, the task's own solution,
  and ``submit``: the server's check of the final filesystem grades it (reward 1 expected). Every command
  execs programs and writes files; its output is checked against the value computed here;
* counts errors (any exception, wrong output, a reward other than 1), the containers the server left
  (by its ``sandgym.owner_pid`` label, after it exited), throughput (commands/s with all N alive,
  episodes/min end to end), memory per sandbox (each container's cgroup, and the host's
  MemAvailable drop divided by N), the time to admit all and the load average.

With the scheduler wired (hello capability ``scheduling``), episodes ask for ``--priority`` and a queue
deadline and the ``queued``/``admitted`` events are counted; without it the client retries CAPACITY.

    .venv/bin/python bench/scheduler-scale.bench.py [--episodes 1000] [--connections 4]
        [--create-concurrency 8] [--out bench/results/scheduler-scale.json]

Benchmarks assert nothing: the exit code is 0 when the run completed with 0 errors and 0 leaks, else 1.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "clients" / "python" / "src"))  # the client of this checkout

from sandgym import AsyncClient, QueueProgress, SandgymError, Scheduling  # noqa: E402
from sandgym._core import ServerEvent  # noqa: E402

LISTEN_RE = re.compile(r"sandgym listening on (ws://\S+)")
IMAGE = "sandgym/busybox:1"

# ------------------------------------------------------------------------------ the work

NUMS = "".join(f"{i}\n" for i in range(1, 5001))
NUMS_SHA = hashlib.sha256(NUMS.encode()).hexdigest()
SEVENS = sum(1 for i in range(1, 5001) if "7" in str(i))


def commands(ep: int) -> list[tuple[str, str]]:
    """(command, text its output must contain) for one episode; all run in a scratch dir of the workspace."""
    cd = "mkdir -p scratch && cd scratch && "
    return [
        (cd + f"echo 'episode {ep}' > id.txt && cat id.txt", f"episode {ep}"),
        (cd + "seq 1 5000 > nums.txt && wc -l < nums.txt", "5000"),
        (cd + "awk '{s+=$1} END {print s}' nums.txt | tee sum.txt", str(sum(range(1, 5001)))),
        (cd + "sort -rn nums.txt | head -n 3 > top.txt && tr '\\n' ' ' < top.txt", "5000 4999 4998"),
        (cd + "sha256sum nums.txt | cut -c1-64 | tee nums.sha", NUMS_SHA),
        # --- barrier: every episode holds its sandbox ---
        (cd + "mkdir -p out && for i in 1 2 3 4 5; do echo line$i > out/f$i.txt; done && ls out | wc -l", "5"),
        (cd + "cat out/*.txt | tr a-z A-Z > upper.txt && tail -n 1 upper.txt", "LINE5"),
        (cd + "tar cf out.tar out && tar tf out.tar | grep -c 'txt$'", "5"),
        (cd + "grep -c 7 nums.txt | tee sevens.txt", str(SEVENS)),
        (cd + f"cat id.txt sum.txt > report.txt && wc -c < report.txt", str(len(f"episode {ep}\n{sum(range(1, 5001))}\n"))),
    ]


BARRIER_AFTER = 5


def shell_tasks() -> list[dict[str, str]]:
    """The shell-v0 tasks and their reference solutions, read from the env's own source (one definition)."""
    tsx = REPO / "node_modules" / ".bin" / "tsx"
    code = ("import('./envs/src/builtin/shell/tasks.ts').then((m) => console.log(JSON.stringify("
            "m.SHELL_TASKS.map((t) => ({ id: t.id, solution: t.solution })))))")
    out = subprocess.run([str(tsx), "-e", code], cwd=REPO, capture_output=True, text=True, timeout=120, check=True)
    tasks: list[dict[str, str]] = json.loads(out.stdout.strip().splitlines()[-1])
    return tasks


# ------------------------------------------------------------------------------ host facts


def sh(*args: str, timeout: float = 120) -> str:
    return subprocess.run(list(args), capture_output=True, text=True, timeout=timeout, check=False).stdout


def preflight(n: int) -> dict[str, Any]:
    if shutil.which("docker") is None or not sh("docker", "info", "--format", "{{.ServerVersion}}").strip():
        sys.exit("no Docker daemon answers: run scripts/start-dockerd.sh")
    if subprocess.run(["docker", "image", "inspect", IMAGE], capture_output=True, check=False).returncode != 0:
        sys.exit(f"image {IMAGE} missing: node bin/sandgym.js images build")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 4 * n + 1024 and hard >= 4 * n + 1024:
        resource.setrlimit(resource.RLIMIT_NOFILE, (4 * n + 1024, hard))  # the server inherits it
    nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    pid_max = int(Path("/proc/sys/kernel/pid_max").read_text())
    threads = len(os.listdir("/proc"))
    facts = {
        "docker_version": sh("docker", "info", "--format", "{{.ServerVersion}}").strip(),
        "cgroup": sh("docker", "info", "--format", "{{.CgroupDriver}} v{{.CgroupVersion}}").strip(),
        "cpus": os.cpu_count(),
        "mem_total_gib": round(meminfo()["MemTotal"] / 2**30, 1),
        "nofile": nofile,
        "pid_max": pid_max,
        "processes_before": threads,
        "containers_before": len(sh("docker", "ps", "-q").split()),
    }
    # Each container costs a shim (~10 threads) and its processes; each sandbox a channel socket in the server.
    if nofile < 2 * n + 256:
        sys.exit(f"open-file limit {nofile} is too low for {n} sandboxes (need ~{2 * n + 256}): raise ulimit -n")
    if pid_max < 20 * n:
        print(f"warning: kernel.pid_max {pid_max} may be tight for {n} containers (~15 tasks each)", file=sys.stderr)
    return facts


def meminfo() -> dict[str, int]:
    out: dict[str, int] = {}
    for line in Path("/proc/meminfo").read_text().splitlines():
        k, v = line.split(":", 1)
        out[k] = int(v.split()[0]) * 1024
    return out


def io_pressure() -> float | None:
    """PSI: % of the last 10 s in which some task waited for I/O (None without PSI)."""
    try:
        first = Path("/proc/pressure/io").read_text().splitlines()[0]
    except (OSError, IndexError):
        return None
    m = re.search(r"avg10=([0-9.]+)", first)
    return float(m.group(1)) if m else None


def loadavg() -> float:
    return float(Path("/proc/loadavg").read_text().split()[0])


def rss_of(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def containers(owner_pid: int, *, all_states: bool = True) -> list[str]:
    args = ["docker", "ps", "--no-trunc", "-q", "--filter", f"label=sandgym.owner_pid={owner_pid}"]
    if all_states:
        args.insert(2, "-a")
    return sh(*args).split()


def cgroup_memory(cid: str) -> tuple[int, int] | None:
    """(usage, rss) bytes of one container: cgroup v1 (cgroupfs) or v2."""
    for base in (Path("/sys/fs/cgroup/memory/docker") / cid, Path("/sys/fs/cgroup/docker") / cid,
                 Path(f"/sys/fs/cgroup/system.slice/docker-{cid}.scope")):
        try:
            if (base / "memory.usage_in_bytes").exists():
                usage = int((base / "memory.usage_in_bytes").read_text())
                stat = dict(line.split() for line in (base / "memory.stat").read_text().splitlines())
                return usage, int(stat.get("total_rss", stat.get("rss", 0)))
            if (base / "memory.current").exists():
                usage = int((base / "memory.current").read_text())
                stat = dict(line.split() for line in (base / "memory.stat").read_text().splitlines())
                return usage, int(stat.get("anon", 0))
        except (OSError, ValueError):
            return None
    return None


def shim_pss(ids: list[str]) -> tuple[int, int]:
    """(shims found, their summed PSS bytes): the containerd-shim of each of these containers, the per-sandbox
    cost outside its cgroup (proportional set size, so shared pages are split between the shims)."""
    want = set(ids)
    found, total = 0, 0
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            argv = (d / "cmdline").read_bytes().split(b"\0")
            if not argv or b"containerd-shim" not in argv[0] or b"-id" not in argv:
                continue
            cid = argv[argv.index(b"-id") + 1].decode()
            if cid not in want:
                continue
            m = re.search(r"^Pss:\s+(\d+) kB", (d / "smaps_rollup").read_text(), flags=re.M)
        except (OSError, ValueError, IndexError):
            continue
        if m:
            found += 1
            total += int(m.group(1)) * 1024
    return found, total


def pct(xs: list[float], p: float) -> float:
    if not xs:
        return float("nan")
    s = sorted(xs)
    return s[min(len(s) - 1, int(p / 100 * len(s)))]


def docker_baseline(n: int, concurrency: int) -> dict[str, Any]:
    """The same-run baseline: ``n`` bare containers of the same image and limits started with ``docker run``
    (``concurrency`` at once, as the server's create_concurrency), then removed: what Docker alone costs here."""
    from concurrent.futures import ThreadPoolExecutor

    label = f"sandgym.scale-baseline={os.getpid()}"

    def start(_: int) -> str:
        return sh("docker", "run", "-d", "--label", label, "--network", "none", "--memory", "256m",
                  "--pids-limit", "128", "--cpus", "1", IMAGE, "sleep", "600").strip()

    t0 = time.monotonic()
    with ThreadPoolExecutor(concurrency) as ex:
        ids = [i for i in ex.map(start, range(n)) if i]
    started_s = time.monotonic() - t0
    t1 = time.monotonic()
    with ThreadPoolExecutor(concurrency) as ex:
        list(ex.map(lambda c: sh("docker", "rm", "-f", c), ids))
    removed_s = time.monotonic() - t1
    left = sh("docker", "ps", "-aq", "--filter", f"label={label}").split()
    for c in left:
        sh("docker", "rm", "-f", c)
    return {"containers": len(ids), "start_per_s": round(len(ids) / started_s, 2) if started_s else None,
            "remove_per_s": round(len(ids) / removed_s, 2) if removed_s else None}


# ------------------------------------------------------------------------------ the server


def start_server(cfg: dict[str, Any]) -> tuple[subprocess.Popen[str], str, str]:
    fd, cfg_path = tempfile.mkstemp(prefix="sandgym-scale-", suffix=".json")
    with os.fdopen(fd, "w") as f:
        json.dump(cfg, f)
    stderr = tempfile.NamedTemporaryFile(prefix="sandgym-scale-stderr-", suffix=".log", delete=False)  # noqa: SIM115
    proc = subprocess.Popen(
        ["node", str(REPO / "bin" / "sandgym.js"), "serve", "--host", "127.0.0.1", "--port", "0",
         "--driver", "docker", "--config", cfg_path, "--no-metrics"],
        cwd=REPO, stdout=subprocess.PIPE, stderr=stderr, text=True, bufsize=1,
    )
    assert proc.stdout is not None
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        m = LISTEN_RE.search(line)
        if m:
            # keep draining stdout so the pipe never fills
            import threading

            threading.Thread(target=lambda: [None for _ in proc.stdout], daemon=True).start()  # type: ignore[union-attr]
            return proc, m.group(1), stderr.name
    proc.kill()
    sys.exit(f"server did not start: {Path(stderr.name).read_text()[-3000:]}")


def stop_server(proc: subprocess.Popen[str], timeout: float) -> float:
    t0 = time.monotonic()
    proc.terminate()
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(30)
    return time.monotonic() - t0


# ------------------------------------------------------------------------------ the run


class Run:
    def __init__(self, n: int, tasks: list[dict[str, str]], args: argparse.Namespace) -> None:
        self.n = n
        self.tasks = tasks
        self.args = args
        self.t0 = 0.0
        self.admitted_at: dict[int, float] = {}
        self.done_at: dict[int, float] = {}
        self.errors: Counter[str] = Counter()
        self.error_samples: list[str] = []
        self.commands = 0
        self.commands_after_barrier = 0
        self.rewards: Counter[float] = Counter()
        self.events: Counter[str] = Counter()
        self.queued_events: dict[str, float] = {}
        self.waiting = n
        self.barrier = asyncio.Event()
        # Commands in flight at once over all episodes (a trainer's policy paces its episodes' steps). Without a
        # bound, the barrier releases N commands at once: on 2 cores 1,000 of them overran shell-v0's 10 s
        # command deadline and the kill's 3 s acknowledgement (sandbox declared dead) in the 1,000 run.
        self.inflight = asyncio.Semaphore(args.max_inflight)
        self.barrier_at = 0.0
        self.after_barrier_done = 0.0
        self.step_latency: list[float] = []
        self.scheduling = False
        #: monotonic time after which a reset still waiting for its sandbox is given up (--deadline)
        self.deadline = float("inf")
        self.queued: set[int] = set()
        self.sched_admitted_at: dict[int, float] = {}
        self.waited_ms: list[int] = []

    def error(self, ep: int, what: str, detail: str) -> None:
        self.errors[what] += 1
        if len(self.error_samples) < 20:
            self.error_samples.append(f"episode {ep}: {what}: {detail[:300]}")

    def arrive(self) -> None:
        self.waiting -= 1
        if self.waiting == 0:
            self.barrier_at = time.monotonic()
            self.barrier.set()

    def on_event(self, ev: ServerEvent) -> None:
        self.events[ev.event] += 1

    async def episode(self, client: AsyncClient, ep: int) -> None:
        task = self.tasks[ep % len(self.tasks)]
        cmds = commands(ep)
        arrived = False
        env = None
        try:
            sched = None
            if self.scheduling:
                sched = Scheduling(priority=self.args.priority, queue_timeout_ms=int(self.args.admit_timeout * 1000))
            env = await client.make("shell-v0", scheduling=sched, timeout=self.args.admit_timeout)

            def on_queue(p: QueueProgress) -> None:
                if p.event == "queued":
                    self.queued.add(ep)
                elif p.event == "admitted":
                    self.sched_admitted_at[ep] = time.monotonic() - self.t0
                    if p.waited_ms is not None:
                        self.waited_ms.append(p.waited_ms)

            reset = env.reset(seed=ep, options={"task_id": task["id"]}, timeout=self.args.admit_timeout, on_queue=on_queue)
            left = self.deadline - time.monotonic()
            try:
                await asyncio.wait_for(reset, max(0.0, left))
            except asyncio.TimeoutError:
                self.error(ep, "no sandbox before the bench deadline", f"--deadline {self.args.deadline:g} s")
                return
            self.admitted_at[ep] = time.monotonic() - self.t0
            for i, (cmd, want) in enumerate(cmds):
                if i == BARRIER_AFTER:
                    arrived = True
                    self.arrive()
                    await self.barrier.wait()
                async with self.inflight:
                    t = time.monotonic()
                    obs, reward, term, trunc, info = await env.step({"name": "bash", "arguments": {"command": cmd}})
                self.step_latency.append(time.monotonic() - t)
                self.commands += 1
                if i >= BARRIER_AFTER:
                    self.commands_after_barrier += 1
                if info.get("exit_code") != 0 or want not in str(obs) or term or trunc:
                    self.error(ep, "wrong command output", f"{cmd!r} -> {str(obs)[:200]!r}")
                    return
            async with self.inflight:
                obs, reward, term, trunc, info = await env.step({"name": "bash", "arguments": {"command": task["solution"]}})
            self.commands += 1
            self.commands_after_barrier += 1
            if info.get("exit_code") != 0:
                self.error(ep, "solution failed", f"{task['id']}: {str(obs)[:200]!r}")
                return
            async with self.inflight:
                obs, reward, term, trunc, info = await env.step({"name": "submit", "arguments": {}})
            self.rewards[reward] += 1
            if not term or reward != 1.0 or info.get("score") != 1:
                self.error(ep, "graded end not solved", f"{task['id']}: reward {reward} {str(obs)[:100]!r}")
                return
            self.done_at[ep] = time.monotonic() - self.t0
        except SandgymError as exc:
            self.error(ep, exc.code, str(exc))
        except Exception as exc:  # noqa: BLE001 - counted and reported, never hidden
            self.error(ep, type(exc).__name__, repr(exc))
        finally:
            if not arrived:
                self.arrive()
            if env is not None:
                try:
                    await env.close()
                except Exception as exc:  # noqa: BLE001
                    self.error(ep, "close failed", repr(exc))


async def sampler(run: Run, stop: asyncio.Event, samples: list[dict[str, Any]], pid: int) -> None:
    while not stop.is_set():
        samples.append({"t": round(time.monotonic() - run.t0, 1), "load1": loadavg(), "admitted": len(run.admitted_at),
                        "done": len(run.done_at), "server_rss_mb": round(rss_of(pid) / 2**20, 1),
                        "mem_available_gib": round(meminfo()["MemAvailable"] / 2**30, 2), "io_pressure_some_avg10": io_pressure()})
        try:
            await asyncio.wait_for(stop.wait(), run.args.sample_every)
        except asyncio.TimeoutError:
            pass


async def main_async(args: argparse.Namespace) -> int:
    n = args.episodes
    facts = preflight(n)
    tasks = shell_tasks()
    print(f"host: {facts}", file=sys.stderr)
    cfg: dict[str, Any] = {
        "max_sessions": n + 64,
        "max_sessions_per_connection": max(1024, n),
        "max_queued_requests": 4096,
        "reset_timeout_ms": int(args.admit_timeout * 1000),
        "idle_timeout_ms": int(args.admit_timeout * 1000) + 600_000,
        "log_level": "warn",
        "pools": {"min_idle": 0, "max_total": n},
        "step_timeout_ms": 180_000,
        "sandbox": {"create_concurrency": args.create_concurrency},
    }
    # The queue deadline a request may ask for: as long as the admission timeout (the default caps it at 10 min).
    cfg["scheduling"] = {"max_queue_timeout_ms": int(args.admit_timeout * 1000)}
    if args.scheduling_config:
        cfg["scheduling"].update(json.loads(args.scheduling_config))
    baseline = docker_baseline(args.baseline, args.create_concurrency) if args.baseline > 0 else {}
    print(f"baseline (bare docker run/rm): {baseline}", file=sys.stderr)
    mem_before = meminfo()["MemAvailable"]
    load_before = loadavg()
    proc, url, stderr_path = start_server(cfg)
    pid = proc.pid
    print(f"server pid {pid} at {url}; {n} episodes over {args.connections} connections", file=sys.stderr)
    run = Run(n, tasks, args)
    samples: list[dict[str, Any]] = []
    mem_at_barrier: dict[str, Any] = {}
    result: dict[str, Any] = {}
    clients: list[AsyncClient] = []
    try:
        for _ in range(args.connections):
            clients.append(await AsyncClient.connect(
                url, timeout=args.step_timeout, retry_capacity=True, capacity_max_attempts=10_000,
                capacity_max_delay=5.0, on_event=run.on_event, client_name="scheduler-scale-bench"))
        run.scheduling = bool(clients[0].capabilities.get("scheduling"))
        stop = asyncio.Event()
        run.t0 = time.monotonic()
        if args.deadline > 0:
            run.deadline = run.t0 + args.deadline
        sampling = asyncio.create_task(sampler(run, stop, samples, pid))

        async def measure_at_barrier() -> None:
            await run.barrier.wait()
            ids = containers(pid, all_states=False)
            mems = [m for m in (cgroup_memory(c) for c in ids) if m is not None]
            shims, shims_pss = shim_pss(ids)
            mem_at_barrier.update({
                "t": round(run.barrier_at - run.t0, 1),
                "containers_running": len(ids),
                "cgroups_read": len(mems),
                "usage_mib_mean": round(statistics.fmean(m[0] for m in mems) / 2**20, 2) if mems else None,
                "usage_mib_p99": round(pct([m[0] for m in mems], 99) / 2**20, 2) if mems else None,
                "rss_mib_mean": round(statistics.fmean(m[1] for m in mems) / 2**20, 3) if mems else None,
                "shims_found": shims,
                "shim_pss_mib_mean": round(shims_pss / max(1, shims) / 2**20, 2),
                "host_mem_drop_mib_per_sandbox": round((mem_before - meminfo()["MemAvailable"]) / max(1, len(ids)) / 2**20, 2),
                "server_rss_mib": round(rss_of(pid) / 2**20, 1),
                "load1": loadavg(),
            })
            print(f"barrier: {mem_at_barrier}", file=sys.stderr)

        measuring = asyncio.create_task(measure_at_barrier())
        await asyncio.gather(*(run.episode(clients[i % len(clients)], i) for i in range(n)))
        t_end = time.monotonic() - run.t0
        if not measuring.done():
            measuring.cancel()
        stop.set()
        await sampling
    finally:
        for c in clients:
            await c.close()
        alive_after_close = len(containers(pid))
        # Closed sessions' sandboxes are removed in the background: wait for the server to finish that
        # (no progress for 2 minutes ends the wait) before stopping it, so what is left after its exit is
        # a leak, not a removal still in flight.
        t_drain = time.monotonic()
        left, last_change, last = alive_after_close, time.monotonic(), alive_after_close
        while left > 0 and time.monotonic() - last_change < 120 and time.monotonic() - t_drain < args.shutdown_timeout:
            await asyncio.sleep(2)
            left = len(containers(pid))
            if left != last:
                last, last_change = left, time.monotonic()
        drain_s = time.monotonic() - t_drain
        shutdown_s = stop_server(proc, args.shutdown_timeout)
    leaked = containers(pid)
    phase2 = (max(run.done_at.values()) - (run.barrier_at - run.t0)) if run.done_at and run.barrier_at else float("nan")
    admits = sorted(run.admitted_at.values())
    result = {
        "episodes": n,
        "connections": args.connections,
        "max_inflight": args.max_inflight,
        "scheduling_capability": run.scheduling,
        "host": facts,
        "load1_before": load_before,
        "errors": sum(run.errors.values()),
        "errors_by_kind": dict(run.errors),
        "error_samples": run.error_samples,
        "completed": len(run.done_at),
        "solved": run.rewards.get(1.0, 0),
        "commands": run.commands,
        "containers_left_after_clients_closed": alive_after_close,
        "containers_left_before_sigterm": left,
        "container_removal_after_close_s": round(drain_s, 1),
        "containers_leaked_after_server_exit": len(leaked),
        "server_shutdown_s": round(shutdown_s, 1),
        "time_to_admit_all_s": round(admits[-1], 1) if len(admits) == n else None,
        "admit_p50_s": round(pct(admits, 50), 1) if admits else None,
        "admissions_per_s": round(len(admits) / admits[-1], 2) if admits else None,
        "all_concurrent_phase_s": round(phase2, 1),
        "commands_per_s_all_concurrent": round(run.commands_after_barrier / phase2, 1) if phase2 == phase2 and phase2 > 0 else None,
        "step_latency_ms_p50": round(pct(run.step_latency, 50) * 1000, 1),
        "step_latency_ms_p99": round(pct(run.step_latency, 99) * 1000, 1),
        "total_s": round(t_end, 1),
        "episodes_per_min": round(len(run.done_at) / (t_end / 60), 1),
        "memory_at_barrier": mem_at_barrier,
        "events": dict(run.events),
        "resets_queued": len(run.queued),
        "scheduler_admitted_all_s": round(max(run.sched_admitted_at.values()), 1) if run.sched_admitted_at else None,
        "queue_wait_ms_p50": pct([float(w) for w in run.waited_ms], 50) if run.waited_ms else None,
        "queue_wait_ms_max": max(run.waited_ms) if run.waited_ms else None,
        "server_config": cfg,
        "load1_max": max((s["load1"] for s in samples), default=None),
        "io_pressure_avg10_mean": round(statistics.fmean(x for x in (s["io_pressure_some_avg10"] for s in samples) if x is not None), 1)
        if any(s["io_pressure_some_avg10"] is not None for s in samples) else None,
        "admitted": len(run.admitted_at),
        "docker_baseline": baseline,
        "server_rss_mib_max": max((s["server_rss_mb"] for s in samples), default=None),
        "samples": samples,
        "server_stderr_tail": Path(stderr_path).read_text(errors="replace")[-2000:],
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2))
    report(result)
    return 0 if result["errors"] == 0 and not leaked and len(run.done_at) == n else 1


def report(r: dict[str, Any]) -> None:
    m = r["memory_at_barrier"]
    rows = [
        ("episodes (completed / solved by the graded end)", f"{r['episodes']} ({r['completed']} / {r['solved']})"),
        ("errors", f"{r['errors']} {r['errors_by_kind'] or ''}"),
        ("containers leaked (label sandgym.owner_pid, after the server exited)", r["containers_leaked_after_server_exit"]),
        ("time to admit all (every episode holding its sandbox)", f"{r['time_to_admit_all_s']} s (admitted {r['admitted']}; p50 {r['admit_p50_s']} s, {r['admissions_per_s']}/s)"),
        ("baseline, same run: bare `docker run -d` / `docker rm -f` of the image, containers/s",
         f"{r['docker_baseline'].get('start_per_s')} / {r['docker_baseline'].get('remove_per_s')} ({r['docker_baseline'].get('containers')} containers)"),
        ("admissions/s vs the bare docker start rate", f"×{round(r['admissions_per_s'] / r['docker_baseline']['start_per_s'], 2)}"
         if r["admissions_per_s"] and r["docker_baseline"].get("start_per_s") else "-"),
        ("sandboxes alive at once (at the barrier)", m.get("containers_running")),
        ("commands/s with all sandboxes alive (5 commands + solution per episode)", r["commands_per_s_all_concurrent"]),
        ("step latency p50 / p99", f"{r['step_latency_ms_p50']} / {r['step_latency_ms_p99']} ms"),
        ("episodes/min end to end (11 commands + graded submit each)", r["episodes_per_min"]),
        ("memory per sandbox: cgroup usage mean / p99, rss mean", f"{m.get('usage_mib_mean')} / {m.get('usage_mib_p99')} MiB, {m.get('rss_mib_mean')} MiB"),
        ("memory per sandbox outside its cgroup: its containerd-shim's PSS (mean)", f"{m.get('shim_pss_mib_mean')} MiB ({m.get('shims_found')} shims)"),
        ("memory per sandbox: host MemAvailable drop / sandboxes (others' work moves it too)", f"{m.get('host_mem_drop_mib_per_sandbox')} MiB"),
        ("server RSS at the barrier / max", f"{m.get('server_rss_mib')} / {r['server_rss_mib_max']} MiB"),
        ("load average before / max; I/O pressure (PSI some avg10, mean of samples)", f"{r['load1_before']} / {r['load1_max']}; {r['io_pressure_avg10_mean']}%"),
        ("containers still being removed when the clients closed / removal time", f"{r['containers_left_after_clients_closed']} / {r['container_removal_after_close_s']} s"),
        ("server shutdown (SIGTERM to exit)", f"{r['server_shutdown_s']} s ({r['containers_left_before_sigterm']} containers left then)"),
        ("scheduler events received / resets that queued", f"{r['events'] or '-'} / {r['resets_queued']}"),
        ("queue wait (admitted events) p50 / max", f"{r['queue_wait_ms_p50']} / {r['queue_wait_ms_max']} ms"),
        ("total", f"{r['total_s']} s"),
    ]
    print(f"\n### Scheduling at scale: {r['episodes']} shell-v0 episodes (scheduling capability: {r['scheduling_capability']})\n")
    print("| metric | value |\n|---|---|")
    for k, v in rows:
        print(f"| {k} | {v} |")
    for s in r["error_samples"]:
        print(f"- {s}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--episodes", type=int, default=1000)
    ap.add_argument("--connections", type=int, default=4)
    ap.add_argument("--create-concurrency", type=int, default=8, help="server sandbox.create_concurrency")
    ap.add_argument("--admit-timeout", type=float, default=1800.0, help="seconds a reset may wait for its sandbox")
    ap.add_argument("--step-timeout", type=float, default=300.0)
    ap.add_argument("--shutdown-timeout", type=float, default=900.0)
    ap.add_argument("--sample-every", type=float, default=5.0)
    ap.add_argument("--deadline", type=float, default=0.0,
                    help="seconds after the start when resets still waiting for a sandbox are given up (0 = none)")
    ap.add_argument("--baseline", type=int, default=16, help="bare docker containers started/removed first (0 = skip)")
    ap.add_argument("--max-inflight", type=int, default=64, help="commands in flight at once over all episodes")
    ap.add_argument("--priority", default="train")
    ap.add_argument("--scheduling-config", default="", help="JSON merged into the server config's 'scheduling' key")
    ap.add_argument("--out", default=str(REPO / "bench" / "results" / "scheduler-scale.json"))
    args = ap.parse_args()
    if args.episodes < 1 or args.connections < 1 or args.max_inflight < 1:
        ap.error("--episodes, --connections and --max-inflight must be >= 1")
    sys.exit(asyncio.run(main_async(args)))


if __name__ == "__main__":
    main()
