import pytest
from sandgym_harness import workspace

brackets = workspace.module("brackets")


@pytest.mark.parametrize("s", ["", "()", "([]{})", "f(a[1], {b: 2})", "((()))", 'x("(")', 'x("\\"(")'])
def test_balanced(s):
    assert brackets.is_balanced(s) is True


@pytest.mark.parametrize("s", ["(", ")", "(]", "([)]", "{{}", '"', '("abc)', "())("])
def test_unbalanced(s):
    assert brackets.is_balanced(s) is False


@pytest.mark.parametrize("s", ['""()', '"" ""', '"\\\\"()', '"a\\\\\\"b"[]', '\\()', '{"}"}', "[x]{y}(z)",
                               'a("[", "]", "{")', "'()'", "'\\'()"])
def test_balanced_strings_and_escapes(s):
    # an empty literal, an escaped backslash before the closing quote, a backslash outside a literal
    # (an ordinary character), single quotes (not delimiters), brackets of every kind
    assert brackets.is_balanced(s) is True


@pytest.mark.parametrize("s", ['"\\"', '("\\")', '"abc"(', '"x"]', "'('", '\\"', "[[]", "{]", "}", "]",
                               "(()", '"\\\\\\"'])
def test_unbalanced_strings_and_escapes(s):
    # the literal is unterminated when its last quote is escaped; brackets after a literal count
    assert brackets.is_balanced(s) is False
