# Hidden-test side of harness.test.ts: every check is a test that must PASS (the vitest file asserts it).
import copy
import datetime
import decimal
import itertools
import math
import time

import pytest
from sandgym_harness import Handle, WorkspaceControlFlow, WorkspaceCrashed, WorkspaceError, WorkspaceProtocolError, WorkspaceTimeout, workspace

m = workspace.module("hostile_mod")


def test_handles_refuse_comparison_hash_truth_copy():
    for obj in (m.always(), m.always_str(), m.Store(), m.double):
        assert isinstance(obj, Handle)
        for op in (lambda: obj == 1, lambda: 1 == obj, lambda: obj != 1, lambda: obj < 1, lambda: obj >= 1, lambda: hash(obj),
                   lambda: bool(obj), lambda: {obj}, lambda: copy.copy(obj), lambda: copy.deepcopy(obj), lambda: obj in [1, 2]):
            with pytest.raises(TypeError):
                op()
    assert "workspace" in repr(m.always())


def test_values_cross_exactly():
    v = m.values()
    assert v["t"] == (1, (2, 3)) and type(v["t"]) is tuple
    assert v["s"] == {1, 2} and v["fs"] == frozenset({"a"}) and v["b"] == b"\x00\xff"
    assert v["d"] == {(1, 2): "pair"} and math.isnan(v["nan"]) and v["inf"] == float("-inf")
    assert v["big"] == 10 ** 300 and v["dec"] == decimal.Decimal("1.10") and str(v["dec"]) == "1.10"
    assert v["date"] == datetime.date(2024, 2, 29) and v["dt"].utcoffset() == datetime.timedelta(0)
    assert v["td"] == datetime.timedelta(days=1, seconds=2)
    assert v["nt"] == (1, 2) and type(v["nt"]) is tuple and v["od"] == {"a": 1} and type(v["od"]) is dict
    assert v["r"] == range(1, 10, 3)
    back = m.ident({"k": [(1, b"x"), {2}, frozenset({3}), decimal.Decimal("2.5"), datetime.date(2020, 1, 1), range(3), None, True, 1.5]})
    assert back == {"k": [(1, b"x"), {2}, frozenset({3}), decimal.Decimal("2.5"), datetime.date(2020, 1, 1), range(3), None, True, 1.5]}


def test_objects_attributes_items_len_contains_str():
    s = m.Store()
    s.add("a", 1).add("b", 2)
    assert len(s) == 2 and "a" in s and "z" not in s and s["b"] == 2 and s.items == {"a": 1, "b": 2}
    s.extra = [1]
    assert s.extra == [1]
    assert str(s) == "Store(2)" and workspace.type_name(s) == "Store" and workspace.isinstance(s, m.Store)
    with pytest.raises(KeyError):
        s["zz"]
    with pytest.raises(AttributeError):
        s.nothing


def test_exception_hierarchy():
    with pytest.raises(m.ParseError) as ei:
        m.bad()
    assert isinstance(ei.value, ValueError) and type(ei.value).__name__ == "Deeper"
    assert ei.value.args == ("nope", 3) and str(ei.value) == "('nope', 3)"
    with pytest.raises(m.Deeper):
        m.bad()
    with pytest.raises(KeyError):
        m.raises("mixed")
    with pytest.raises(m.ParseError):
        m.raises("mixed")
    with pytest.raises(UnicodeError):
        m.raises("unicode")
    with pytest.raises(FileNotFoundError):
        m.raises("oserror")


@pytest.mark.parametrize("kind", ["exit", "kbd", "stop", "genexit", "skipped", "base", "subexit"])
def test_control_flow_never_crosses(kind):
    with pytest.raises(WorkspaceControlFlow):
        m.raises(kind)


def test_fake_pytest_outcome_is_an_ordinary_exception():
    with pytest.raises(Exception) as ei:
        m.raises("failed")
    assert type(ei.value).__module__.startswith("workspace.")


def test_stop_iteration_does_not_truncate_a_judge_loop():
    with pytest.raises(WorkspaceControlFlow):
        list(map(m.stop_in_map, [1, 2, 3]))


def test_callbacks_reentrant_and_errors():
    seen = []
    assert m.each([1, 2, 3], lambda x: seen.append(x) or x * 10) == [10, 20, 30]
    assert seen == [1, 2, 3]
    assert m.reenter(lambda d: m.reenter(lambda d2: m.double(21))) == 42
    def boom():
        raise ValueError("from the judge")
    assert m.catch_from_callback(boom) == "caught from the judge"
    m.keep(lambda x: x + 1)
    assert m.call_kept() == 42
    assert m.each([1, 2], len if False else str) == ["1", "2"]


def test_callback_pytest_outcome_restarts_the_worker():
    with pytest.raises(pytest.fail.Exception):
        m.each([1], lambda x: pytest.fail("judge-side failure"))
    assert m.double(2) == 4


def test_iterators_both_ways():
    assert list(m.gen(3)) == [0, 1, 2]
    assert workspace.list(m.gen(5)) == [0, 1, 2, 3, 4]
    assert workspace.take(m.count_forever(), 3) == [0, 1, 2]
    assert list(itertools.islice(m.chunk(itertools.count(), 2), 3)) == [[0, 1], [2, 3], [4, 5]]
    assert workspace.list(m.chunk(iter("abcde"), 2)) == [["a", "b"], ["c", "d"], ["e"]]
    g = m.gen(1)
    assert next(g) == 0
    with pytest.raises(StopIteration):
        next(g)
    with pytest.raises(WorkspaceError):
        workspace.list(m.count_forever(), limit=10)


def test_call_many():
    assert workspace.call_many(m.double, [(i,) for i in range(2000)]) == [2 * i for i in range(2000)]
    r = workspace.call_many(m.bad, [(), ()], return_exceptions=True)
    assert isinstance(r[0], m.ParseError) and isinstance(r[1], m.Deeper)
    with pytest.raises(m.ParseError):
        workspace.call_many(m.bad, [()])


@pytest.mark.parametrize("attack", ["frame_huge", "frame_deep", "frame_many", "frame_nan", "frame_utf8", "frame_not_object", "frame_wrong_id",
                                    "frame_unknown_tag", "frame_bad_handle", "frame_guess_callback", "frame_guess_judge_object", "frame_unhashable_key"])
def test_malformed_frames_kill_the_worker_not_the_judge(attack):
    # The call that arms the attack gets the forged reply.
    with pytest.raises(WorkspaceProtocolError):
        getattr(m, attack)()
    assert m.double(5) == 10  # a fresh worker; the module handle re-resolves


def test_exception_class_named_by_the_worker_is_not_looked_up():
    with pytest.raises(Exception) as ei:
        m.frame_exc_class_by_name()
    assert type(ei.value) is Exception


def test_unsolicited_frame_between_calls():
    assert m.unsolicited_later() == "ok"
    time.sleep(1.0)
    with pytest.raises(WorkspaceProtocolError):
        m.double(1)
    assert m.double(1) == 2


def test_crash():
    old = m.Store()
    with pytest.raises(WorkspaceCrashed):
        m.die()
    with pytest.raises(WorkspaceCrashed):
        old.add("a", 1)  # belonged to the dead worker
    # kill -1 is played only in real sandboxes (test/integrity/harness-attacks.test.ts): here the worker shares the
    # host's uid, and kill -1 would kill every process of that user on the machine.
    assert m.double(3) == 6


def test_timeout():
    with workspace.timeout(1):
        with pytest.raises(WorkspaceTimeout):
            m.hang()
    assert m.double(3) == 6


def test_memory_limit_is_a_memory_error():
    with pytest.raises(MemoryError):
        m.alloc()


def test_import_that_hangs_or_dies_fails_fast_afterwards():
    sleepy = workspace.module("sleepy_mod")
    with workspace.timeout(1):
        with pytest.raises(WorkspaceTimeout):
            sleepy.x
    t = time.monotonic()
    with pytest.raises(WorkspaceTimeout):
        sleepy.x
    assert time.monotonic() - t < 0.5
    dying = workspace.module("dying_mod")
    with pytest.raises(WorkspaceCrashed):
        dying.x


def test_shadowing_stdlib_is_refused_and_harmless():
    with pytest.raises(ImportError):
        workspace.module("json").x
    assert m.double(2) == 4  # the workspace json.py / cmd.py / pdb.py were never imported by the worker


def test_run_and_files():
    r = workspace.run(["sh", "-c", "cat; echo err >&2; exit 3"], stdin="in")
    assert (r.exit_code, r.returncode, r.stdout, r.stderr, r.timed_out) == (3, 3, "in", "err\n", False)
    r = workspace.run(["sleep", "10"], timeout=0.5)
    assert r.timed_out and r.exit_code is None
    d = workspace.tmpdir()
    workspace.write_file(d + "/a/b.txt", "x", mode=0o755)
    assert workspace.tree(d) == ["a/", "a/b.txt"] and workspace.read_text(d + "/a/b.txt") == "x"
    assert workspace.stat(d + "/a/b.txt")["is_executable"] is True
    workspace.utime(d + "/a/b.txt", (1000, 1000))
    assert workspace.stat(d + "/a/b.txt")["mtime"] == 1000.0
    assert workspace.exists("hostile_mod.py") and workspace.isfile("hostile_mod.py") and not workspace.isdir("hostile_mod.py")
    with pytest.raises(WorkspaceError):
        workspace.read_file(d + "/a/b.txt", max_bytes=0)
    with pytest.raises(FileNotFoundError):
        workspace.read_file("nope.txt")


def test_judge_values_that_cannot_cross():
    with pytest.raises(TypeError):
        m.ident(object())
    with pytest.raises(ValueError):
        nested = []
        for _ in range(80):
            nested = [nested]
        m.ident(nested)


# ---- by reference: workspace.ref / value / call_ref / item_ref -----------------------------------------
def test_ref_mutation_by_workspace_code_is_visible_through_value():
    data = workspace.ref([[3, 4], [1, 2]])
    assert isinstance(data, Handle) and workspace.type_name(data) == "list"
    assert m.mutate(data) == 3
    assert workspace.value(data) == [[3, 4, 0], [1, 2], "m"]
    plain = [[3, 4], [1, 2]]
    m.mutate(plain)  # by value: the worker mutated its own copy
    assert plain == [[3, 4], [1, 2]]
    untouched = workspace.ref({"k": [1], "t": (1, [2])})
    m.ident(untouched)
    back = workspace.value(untouched)
    assert back == {"k": [1], "t": (1, [2])} and type(back["t"]) is tuple
    holder = workspace.ref([m.Store()])  # handles inside a ref stay the worker's objects
    assert workspace.type_name(workspace.item_ref(holder, 0)) == "Store"


def test_call_ref_aliasing_is_observable_through_item_ref():
    a, b = workspace.ref([1]), workspace.ref({"k": [2]})
    shared = workspace.call_ref(m.share, a, b)
    assert isinstance(shared, Handle) and workspace.type_name(shared) == "dict"
    workspace.item_ref(shared, "a").append("x")
    workspace.item_ref(shared, "b").append("y")
    assert workspace.value(a) == [1, "x"] and workspace.value(b) == {"k": [2, "y"]}
    copied = workspace.call_ref(m.share_copy, a, b)
    workspace.item_ref(copied, "a").append("z")
    workspace.item_ref(copied, "b").append("z")
    assert workspace.value(a) == [1, "x"] and workspace.value(b) == {"k": [2, "y"]}
    assert workspace.value(copied) == {"a": [1, "x", "z"], "b": [2, "y", "z"]}
    nested = workspace.ref({"x": [{"y": [0]}]})
    workspace.item_ref(nested, "x", 0, "y").append(1)
    assert workspace.value(nested) == {"x": [{"y": [0, 1]}]}
    assert workspace.value(workspace.call_ref(m.double, x=4)) == 8
    with pytest.raises(KeyError):
        workspace.item_ref(nested, "nope")
    with pytest.raises(m.ParseError):
        workspace.call_ref(m.bad)


def test_refs_are_handles_refuse_comparison_and_die_with_the_worker():
    for h in (workspace.ref([1]), workspace.call_ref(m.ident, 5), workspace.item_ref(workspace.ref([[1]]), 0)):
        for op in (lambda: h == [1], lambda: h != 5, lambda: h < 1, lambda: hash(h), lambda: bool(h), lambda: [1] == h):
            with pytest.raises(TypeError):
                op()
    with pytest.raises(TypeError):
        workspace.value([1])  # a judge value is not a reference
    with pytest.raises(TypeError):
        workspace.call_ref(len, [1])  # only workspace callables
    r = workspace.ref([1])
    workspace.restart()
    with pytest.raises(WorkspaceCrashed):
        workspace.value(r)


def test_ref_limits_hold():
    nested = []
    for _ in range(80):
        nested = [nested]
    with pytest.raises(ValueError):
        workspace.ref(nested)  # judge -> worker: refused before sending
    deep = workspace.call_ref(m.deep, 100)
    with pytest.raises(WorkspaceError):
        workspace.value(deep)  # worker -> judge: too deep to cross by value
    assert workspace.value(workspace.item_ref(deep, *[0] * 60)) == m.deep(40)
    big = workspace.call_ref(m.many, 1_100_000)
    with pytest.raises(WorkspaceError):
        workspace.value(big)
    assert len(big) == 1_100_000
    assert m.double(2) == 4  # the worker is still the same, healthy one


def test_a_reference_is_never_answered_by_value():
    with pytest.raises(WorkspaceProtocolError):
        workspace.call_ref(m.frame_ref_as_value)
    assert m.double(5) == 10


@pytest.mark.parametrize("op", ["ref", "value", "call_ref", "item_ref"])
def test_the_worker_cannot_make_or_read_references_on_its_own(op):
    with pytest.raises(WorkspaceProtocolError):
        m.ask_judge(op)
    assert m.double(5) == 10
