# Workspace module for harness.test.ts: honest helpers plus every hostile move a worker can make.
import collections
import datetime
import decimal
import itertools
import os
import signal
import struct
import json as _json
import time

import __main__  # the worker (python -c): its globals


class Always:
    def __eq__(self, o):
        return True

    def __ne__(self, o):
        return False

    def __lt__(self, o):
        return True

    def __bool__(self):
        return True

    __hash__ = object.__hash__


class S(str):
    def __eq__(self, o):
        return True

    __hash__ = str.__hash__


def always():
    return Always()


def always_str():
    return S("x")


class ParseError(ValueError):
    pass


class Deeper(ParseError):
    pass


class Mixed(KeyError, ParseError):
    pass


def bad(*a):
    raise Deeper("nope", 3)


def raises(kind):
    Skipped = type("Skipped", (BaseException,), {"__module__": "_pytest.outcomes"})
    Failed = type("Failed", (Exception,), {"__module__": "_pytest.outcomes"})
    SubExit = type("SubExit", (SystemExit,), {})
    raise {"exit": SystemExit(0), "kbd": KeyboardInterrupt(), "stop": StopIteration(), "genexit": GeneratorExit(), "skipped": Skipped("skip"),
           "base": BaseException("b"), "subexit": SubExit(1), "failed": Failed("f"), "mixed": Mixed("k"), "unicode": UnicodeDecodeError("utf-8", b"\xff", 0, 1, "bad"),
           "oserror": FileNotFoundError(2, "missing")}[kind]


def stop_in_map(x):
    if x == 2:
        raise StopIteration
    return x


def each(xs, fn):
    return [fn(x) for x in xs]


def reenter(fn, depth=0):
    return fn(depth)


def catch_from_callback(fn):
    try:
        fn()
    except ValueError as e:
        return "caught " + str(e)


def keep(fn):
    global KEPT
    KEPT = fn
    return None


def call_kept():
    return KEPT(41)


def double(x):
    return 2 * x


def ident(x):
    return x


def gen(n):
    for i in range(n):
        yield i


def count_forever():
    return itertools.count()


def chunk(it, n):
    it = iter(it)
    while True:
        c = list(itertools.islice(it, n))
        if not c:
            return
        yield c


def values():
    P = collections.namedtuple("P", "x y")
    return {
        "t": (1, (2, 3)), "s": {1, 2}, "fs": frozenset({"a"}), "b": b"\x00\xff", "d": {(1, 2): "pair"}, "nan": float("nan"),
        "inf": float("-inf"), "big": 10 ** 300, "dec": decimal.Decimal("1.10"), "date": datetime.date(2024, 2, 29),
        "dt": datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc), "td": datetime.timedelta(days=1, seconds=2),
        "nt": P(1, 2), "od": collections.OrderedDict(a=1), "r": range(1, 10, 3),
    }


class Store:
    def __init__(self):
        self.items = {}

    def add(self, k, v):
        self.items[k] = v
        return self

    def __len__(self):
        return len(self.items)

    def __contains__(self, k):
        return k in self.items

    def __getitem__(self, k):
        return self.items[k]

    def __str__(self):
        return "Store(%d)" % len(self.items)


def die():
    os._exit(3)


def hang():
    while True:
        pass


def alloc():
    return len(b"x" * (3 << 30))


def _frame(b):
    os.write(__main__.ROUT, struct.pack(">I", len(b)) + b)


def _answer(payload_fn):
    # Replace the worker's reply path for one call: the next reply is whatever payload_fn makes of it.
    orig = __main__.send

    def bad(msg):
        __main__.send = orig
        payload_fn(msg)

    __main__.send = bad


def frame_huge():
    _answer(lambda m: os.write(__main__.ROUT, b"\xff\xff\xff\xff" + b"x" * 1000))


def frame_deep():
    _answer(lambda m: _frame(b'{"op":"return","id":%d,"value":' % m["id"] + b"[" * 100000 + b"]" * 100000 + b"}"))


def frame_many():
    _answer(lambda m: _frame(_json.dumps({"op": "return", "id": m["id"], "value": [0] * 1_100_000}).encode()))


def frame_nan():
    _answer(lambda m: _frame(b'{"op":"return","id":%d,"value":NaN}' % m["id"]))


def frame_utf8():
    _answer(lambda m: _frame(b"\xff\xfe{}"))


def frame_not_object():
    _answer(lambda m: _frame(b"[1, 2]"))


def frame_wrong_id():
    _answer(lambda m: _frame(_json.dumps({"op": "return", "id": m["id"] + 7, "value": 1}).encode()))


def frame_unknown_tag():
    _answer(lambda m: _frame(_json.dumps({"op": "return", "id": m["id"], "value": {"q": "hello"}}).encode()))


def frame_bad_handle():
    _answer(lambda m: _frame(_json.dumps({"op": "return", "id": m["id"], "value": {"h": "../../etc", "k": "obj", "n": "x"}}).encode()))


def frame_guess_callback():
    _answer(lambda m: _frame(_json.dumps({"op": "callback", "id": 1, "fn": "%032x" % 7, "args": [], "kwargs": {}}).encode()))


def frame_guess_judge_object():
    _answer(lambda m: _frame(_json.dumps({"op": "return", "id": m["id"], "value": {"cb": "%032x" % 9}}).encode()))


def frame_unhashable_key():
    _answer(lambda m: _frame(_json.dumps({"op": "return", "id": m["id"], "value": {"d": [[[1], 2]]}}).encode()))


def frame_exc_class_by_name():
    # Tries to make the judge raise pytest's own Skipped or an arbitrary class named by the worker.
    _answer(lambda m: _frame(_json.dumps({"op": "raise", "id": m["id"], "exc": {"cls": {"b": "Skipped"}, "args": [], "str": ""}}).encode()))


def unsolicited_later():
    # A frame that arrives after this call has returned, while no call is pending.
    if os.fork() == 0:
        time.sleep(0.3)
        _frame(_json.dumps({"op": "callback", "id": 5, "fn": "%032x" % 1, "args": [], "kwargs": {}}).encode())
        os._exit(0)
    return "ok"


# ---- by reference (workspace.ref / value / call_ref / item_ref) ----------------------------------------
def mutate(xs):
    xs.append("m")
    xs[0].append(0)
    return len(xs)


def share(a, b):
    return {"a": a, "b": b["k"]}  # aliases both inputs


def share_copy(a, b):
    return {"a": list(a), "b": list(b["k"])}


def deep(n):
    v = []
    for _ in range(n):
        v = [v]
    return v


def many(n):
    return [0] * n


def frame_ref_as_value():
    # Answers a call_ref by value: the judge asked for a reference and must not accept anything else.
    _answer(lambda m: _frame(_json.dumps({"op": "return", "id": m["id"], "value": [1, 2]}).encode()))


def ask_judge(op):
    # The worker tries to make the judge keep or read back a reference: only the judge asks for those.
    return __main__.call_judge({"op": op, "value": [1], "obj": "%032x" % 1, "args": [], "kwargs": {}, "keys": []})
