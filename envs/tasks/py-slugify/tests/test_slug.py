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


@pytest.mark.parametrize("text,expected", [
    ("ÉCOLE Française", "ecole-francaise"),
    ("naïve café", "naive-cafe"),
    ("--42--", "42"),
    ("A1b2C3", "a1b2c3"),
    ("tab\tnew\nline", "tab-new-line"),
    ("snake_case_name", "snake-case-name"),
    ("x€y", "x-y"),
    ("ALL CAPS", "all-caps"),
])
def test_more_rules(text, expected):
    # upper-case accented letters, digits at the edges, underscores and control characters as separators
    assert slug.slugify(text) == expected
