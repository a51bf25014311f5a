"""Start the real sandgym server CLI on a free port (port 0) and parse its listening line."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[3]
LISTEN_RE = re.compile(r"sandgym listening on (ws://\S+)")
START_TIMEOUT = float(os.environ.get("SANDGYM_TEST_START_TIMEOUT", "90"))


class ServerProcess:
    """One server process: ``node bin/sandgym.js serve --host 127.0.0.1 --port 0 --fixtures``."""

    def __init__(self, config: dict[str, Any] | None = None, *, extra_args: list[str] | None = None) -> None:
        self.config = dict(config or {})
        node = os.environ.get("SANDGYM_NODE", "node")
        self.args = [
            *shlex.split(node),
            str(REPO / "bin" / "sandgym.js"),
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            "--fixtures",
            "--log-level",
            "warn",
            "--driver",
            "none",
        ]
        self._cfg_file: str | None = None
        if self.config:
            fd, self._cfg_file = tempfile.mkstemp(prefix="sandgym-test-", suffix=".json")
            with os.fdopen(fd, "w") as f:
                json.dump({"fixtures": True, **self.config}, f)
            self.args += ["--config", self._cfg_file]
        self.args += list(extra_args or [])
        self.stderr_path = tempfile.mkstemp(prefix="sandgym-test-stderr-", suffix=".log")[1]
        self.proc: subprocess.Popen[str] | None = None
        self.url = ""
        self.stdout_lines: list[str] = []

    def start(self) -> ServerProcess:
        self._stderr = open(self.stderr_path, "w")  # noqa: SIM115 - open for the process's life, closed in stop()
        self.proc = subprocess.Popen(
            self.args, cwd=REPO, stdout=subprocess.PIPE, stderr=self._stderr, text=True, bufsize=1
        )
        found: list[str] = []
        done = threading.Event()

        def pump() -> None:
            assert self.proc is not None and self.proc.stdout is not None
            for line in self.proc.stdout:  # keep draining so the pipe never fills
                self.stdout_lines.append(line)
                m = LISTEN_RE.search(line)
                if m and not found:
                    found.append(m.group(1))
                    done.set()
            done.set()

        threading.Thread(target=pump, name="sandgym-server-stdout", daemon=True).start()
        done.wait(START_TIMEOUT)
        if not found:
            rc = self.proc.poll()
            self.stop()
            why = f"exited with code {rc}" if rc is not None else f"printed no listening line within {START_TIMEOUT}s"
            raise RuntimeError(
                f"server {why}: {' '.join(self.args)}\n"
                f"stdout: {''.join(self.stdout_lines)[-2000:]}\nstderr: {self.stderr_tail()}"
            )
        self.url = found[0]
        return self

    def stderr_tail(self, n: int = 4000) -> str:
        try:
            return Path(self.stderr_path).read_text(errors="replace")[-n:]
        except OSError:
            return ""

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        """Hard kill (SIGKILL): the connection drops without a close frame."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        if self._cfg_file:
            try:
                os.unlink(self._cfg_file)
            except OSError:
                pass
            self._cfg_file = None
        if hasattr(self, "_stderr"):
            self._stderr.close()


class ServerFactory:
    """Caches one server per distinct config (the transcripts' ``server`` overrides)."""

    def __init__(self) -> None:
        self._servers: dict[str, ServerProcess] = {}

    def get(self, config: dict[str, Any] | None = None) -> ServerProcess:
        key = json.dumps(config or {}, sort_keys=True)
        srv = self._servers.get(key)
        if srv is None or not srv.alive:
            srv = ServerProcess(config).start()
            self._servers[key] = srv
        return srv

    def fresh(self, config: dict[str, Any] | None = None) -> ServerProcess:
        """An uncached server the caller owns (for tests that kill it)."""
        return ServerProcess(config).start()

    def stop_all(self) -> None:
        for srv in self._servers.values():
            srv.stop()
        self._servers.clear()


def wait_until(pred: Any, timeout: float = 5.0, interval: float = 0.01) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(interval)
    return bool(pred())


#: each sandboxed env's image (see `node bin/sandgym.js images list`)
SANDBOX_IMAGES = {"shell-v0": "sandgym/busybox:1", "code-v0": "sandgym/python:1"}


def docker_facility() -> str:
    """'' when Docker answers and the images are built, else why not."""
    if shutil.which("docker") is None:
        return "no docker CLI on PATH"
    try:
        info = subprocess.run(
            ["docker", "info", "--format", "{{.ServerVersion}}"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return "docker info timed out"
    if info.returncode != 0:
        return f"no Docker daemon answers ({info.stderr.strip()[:200]}); run scripts/start-dockerd.sh"
    for image in SANDBOX_IMAGES.values():
        r = subprocess.run(["docker", "image", "inspect", image], capture_output=True, timeout=30, check=False)
        if r.returncode != 0:
            return f"image {image} missing; run `node bin/sandgym.js images build`"
    return ""


def docker_server(purpose: str, config: dict[str, Any] | None = None) -> ServerProcess:
    """A started server with the Docker driver. Without Docker or its images the calling test is skipped with the
    reason, unless SANDGYM_REQUIRE_DOCKER=1 (set by .ci/run) asks for a failure, as server/test/sandbox/facilities.ts
    does for the TypeScript suites. The caller stops it."""
    import pytest

    why = docker_facility()
    if why:
        if os.environ.get("SANDGYM_REQUIRE_DOCKER") == "1":
            pytest.fail(f"docker is required (SANDGYM_REQUIRE_DOCKER=1) but unavailable: {why}")
        pytest.skip(f"{purpose}: {why}")
    srv = ServerProcess(config)
    srv.args[srv.args.index("--driver") + 1] = "docker"
    srv.start()
    return srv
