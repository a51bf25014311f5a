import pytest
from sandgym_harness import workspace

brackets = workspace.module("brackets")


@pytest.mark.parametrize("s", ["", "()", "([]{})", "f(a[1], {b: 2})", "((()))", 'x("(")', 'x("\\"(")'])
def test_balanced(s):
    assert brackets.is_balanced(s) is True


@pytest.mark.parametrize("s", ["(", ")", "(]", "([)]", "{{}", '"', '("abc)', "())("])
def test_unbalanced(s):
    assert brackets.is_balanced(s) is False
