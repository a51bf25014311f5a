from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _server import REPO, ServerFactory, ServerProcess

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
