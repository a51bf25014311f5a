import pytest
from slug import slugify


def test_basic():
    assert slugify("Hello World") == "hello-world"


def test_runs_collapse():
    assert slugify("a  --  b__c") == "a-b-c"


def test_strip_edges():
    assert slugify("  --Leading and trailing!!  ") == "leading-and-trailing"


def test_accents():
    assert slugify("Crème Brûlée Über") == "creme-brulee-uber"


def test_digits_kept():
    assert slugify("Version 2.0 released") == "version-2-0-released"


@pytest.mark.parametrize("text", ["", "   ", "!!!", "日本"])
def test_empty_results(text):
    assert slugify(text) == ""


def test_non_latin_is_separator():
    assert slugify("tea日本time") == "tea-time"
