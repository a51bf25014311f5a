"""The counter environment (the template's <name>_environment.py: a synchronous Environment that the
server runs in each session's executor thread)."""

import time
from uuid import uuid4

from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import State

try:
    from ..models import CounterAction, CounterObservation
except ImportError:
    from models import CounterAction, CounterObservation


class CounterEnvironment(Environment):
    """Each step adds the action's increment to a counter; the reward is the increment."""

    # Each WebSocket session gets its own instance (factory mode), as the template enables.
    SUPPORTS_CONCURRENT_SESSIONS: bool = True

    def __init__(self) -> None:
        self._state = State(episode_id=str(uuid4()), step_count=0)
        self._count = 0

    def reset(self) -> CounterObservation:
        self._state = State(episode_id=str(uuid4()), step_count=0)
        self._count = 0
        return CounterObservation(count=0, done=False, reward=0.0)

    def step(self, action: CounterAction) -> CounterObservation:  # type: ignore[override]
        if action.delay_s:
            time.sleep(action.delay_s)
        self._state.step_count += 1
        self._count += action.increment
        return CounterObservation(count=self._count, done=False, reward=float(action.increment))

    @property
    def state(self) -> State:
        return self._state
