import pytest
from sandgym_harness import workspace

slug = workspace.module("slug")


def test_basic():
    assert slug.slugify("Hello World") == "hello-world"


def test_runs_collapse():
    assert slug.slugify("a  --  b__c") == "a-b-c"


def test_strip_edges():
    assert slug.slugify("  --Leading and trailing!!  ") == "leading-and-trailing"


def test_accents():
    assert slug.slugify("Crème Brûlée Über") == "creme-brulee-uber"


def test_digits_kept():
    assert slug.slugify("Version 2.0 released") == "version-2-0-released"


@pytest.mark.parametrize("text", ["", "   ", "!!!", "日本"])
def test_empty_results(text):
    assert slug.slugify(text) == ""


def test_non_latin_is_separator():
    assert slug.slugify("tea日本time") == "tea-time"
