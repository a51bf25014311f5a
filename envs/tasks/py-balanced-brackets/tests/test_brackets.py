import pytest
from brackets import is_balanced


@pytest.mark.parametrize("s", ["", "()", "([]{})", "f(a[1], {b: 2})", "((()))", 'x("(")', 'x("\\"(")'])
def test_balanced(s):
    assert is_balanced(s) is True


@pytest.mark.parametrize("s", ["(", ")", "(]", "([)]", "{{}", '"', '("abc)', "())("])
def test_unbalanced(s):
    assert is_balanced(s) is False
