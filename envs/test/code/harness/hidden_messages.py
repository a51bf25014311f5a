# A task's hidden tests (fixture data, copied in as tests/test_messages.py by harness.test.ts): they FAIL on
# purpose, and harness.test.ts checks what agent.json says about each. test_skipped is an author's own skip in a
# hidden test: the grader must count it as failed, never as passed or absent.
import pytest
from sandgym_harness import workspace

m = workspace.module("hostile_mod")


def test_author_message():
    assert m.double(1) == 3, "double(1) should be 2"


def test_no_message():
    assert m.double(1) == 3


@pytest.mark.parametrize("secret", ["EXPECTED-VALUE-1", "EXPECTED-VALUE-2"])
def test_param(secret):
    assert m.ident(secret) == secret + "!"


def test_workspace_assertion_is_not_the_authors():
    m.raises("base")


def test_timeout_message():
    with workspace.timeout(1):
        m.hang()


def test_skipped():
    pytest.skip("author skip")


def test_passes():
    assert m.double(2) == 4
