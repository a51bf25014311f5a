from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _server import REPO, ServerFactory, ServerProcess, docker_server

VECTORS = REPO / "protocol" / "vectors"


def load_vectors(kind: str) -> list[tuple[str, Any]]:
    """All vector files of one kind as (id, parsed json)."""
    out = []
    for path in sorted((VECTORS / kind).glob("*.json")):
        out.append((path.stem, json.loads(path.read_text("utf-8"))))
    return out


@pytest.fixture(scope="session")
def servers() -> Iterator[ServerFactory]:
    factory = ServerFactory()
    yield factory
    factory.stop_all()


@pytest.fixture(scope="session")
def server(servers: ServerFactory) -> ServerProcess:
    """The default fixture server (``--fixtures``, default config)."""
    return servers.get(None)


@pytest.fixture(scope="session")
def url(server: ServerProcess) -> str:
    return server.url


# A server with the Docker driver for the sandboxed envs (shell-v0, code-v0). Without Docker or the images the
# module using it is skipped with the reason, unless SANDGYM_REQUIRE_DOCKER=1 (set by .ci/run) asks for a failure,
# as server/test/sandbox/facilities.ts does for the TypeScript suites.
@pytest.fixture(scope="module")
def docker_url() -> Iterator[str]:
    srv = docker_server("shell-v0 / code-v0 need Docker")
    try:
        yield srv.url
    finally:
        srv.stop()
