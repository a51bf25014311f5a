# A task's hidden tests (fixture data, copied in as tests/test_slow_start.py by harness.test.ts): the worker's
# interpreter is a wrapper that sleeps before it starts (a machine under heavy load), longer than the task's
# call timeout. The start has a budget of its own, so the first call still answers and the test passes.
from sandgym_harness import workspace

m = workspace.module("hostile_mod")


def test_first_call_after_a_slow_start():
    assert m.double(21) == 42
