"""The TRL tests need torch, transformers and trl (the [trl] extra): run-tests.sh runs them with the venv that
clients/python/scripts/trl-venv.sh makes. Without that stack they skip, naming why, unless
SANDGYM_REQUIRE_TRL=1 (set by .ci/run) makes them fail instead."""

from __future__ import annotations

import importlib.util
import os

import pytest

MISSING = [m for m in ("torch", "transformers", "trl", "datasets") if importlib.util.find_spec(m) is None]


def require_trl() -> None:
    if not MISSING:
        return
    why = f"{', '.join(MISSING)} not installed (the [trl] extra; scripts/trl-venv.sh makes a venv with them)"
    if os.environ.get("SANDGYM_REQUIRE_TRL") == "1":
        pytest.fail(f"SANDGYM_REQUIRE_TRL=1 but {why}")
    pytest.skip(why, allow_module_level=True)
