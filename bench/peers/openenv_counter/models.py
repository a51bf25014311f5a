"""Data models for the counter environment (the template's models.py, with a counter instead of an echo)."""

from openenv.core.env_server.types import Action, Observation
from pydantic import Field


class CounterAction(Action):
    """Add ``increment`` to the counter. ``delay_s`` makes the step sleep first: only the benchmark's
    timeout check sets it (sandgym's side uses test/slow-v0 for the same purpose)."""

    increment: int = Field(default=1, description="Amount added to the counter")
    delay_s: float = Field(default=0.0, ge=0.0, le=10.0, description="Seconds the step sleeps first")


class CounterObservation(Observation):
    """The counter after the step."""

    count: int = Field(default=0, description="Counter value")
