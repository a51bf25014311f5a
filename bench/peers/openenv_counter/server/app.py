"""FastAPI application for the counter environment (the template's server/app.py).

Served as the template's Dockerfile does, one uvicorn worker:
    cd bench/peers/openenv_counter && uvicorn server.app:app --host 127.0.0.1 --port 8000
The template sets max_concurrent_envs=1 ("increase this number to allow more concurrent WebSocket
sessions"); the benchmark needs as many as it opens at once, from PEERS_MAX_SESSIONS (default 8192).
"""

import os

from openenv.core.env_server.http_server import create_app

try:
    from ..models import CounterAction, CounterObservation
    from .counter_environment import CounterEnvironment
except ImportError:
    from models import CounterAction, CounterObservation
    from server.counter_environment import CounterEnvironment


app = create_app(
    CounterEnvironment,
    CounterAction,
    CounterObservation,
    env_name="counter",
    max_concurrent_envs=int(os.environ.get("PEERS_MAX_SESSIONS", "8192")),
)
