"""``import sandgym.gym`` without the ``gymnasium`` extra names the extra to install.

Runs in a fresh interpreter where the missing package is made unimportable (``sys.modules[name] =
None`` makes ``import name`` raise ModuleNotFoundError, as an absent package does), so the rest of
the suite keeps its gymnasium.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

SCRIPT = """
import sys
sys.modules[{missing!r}] = None
import sandgym  # the core client needs no extra
try:
    import sandgym.gym
except ImportError as e:
    print(type(e).__name__, e, sep=": ")
    print("cause:", type(e.__cause__).__name__)
else:
    print("imported")
"""


@pytest.mark.parametrize("missing", ["gymnasium", "numpy"])
def test_import_without_the_extra_names_it(missing: str) -> None:
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT.format(missing=missing)], capture_output=True, text=True, timeout=60, check=True
    )
    lines = out.stdout.splitlines()
    assert lines[0] == (
        f"ImportError: sandgym.gym needs the 'gymnasium' extra ({missing} is not installed): pip install 'sandgym[gymnasium]'"
    ), out.stdout + out.stderr
    assert lines[1] == "cause: ModuleNotFoundError"


def test_import_with_the_extra_works() -> None:
    out = subprocess.run(
        [sys.executable, "-c", "import sandgym.gym; print('ok')"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert out.stdout.strip() == "ok"
