# The runner of a repository task's tests (envs/src/repo/repo-grade.ts), run AS THE AGENT UID in a fresh grading
# sandbox: `python3 -I -B sandgym_repo_runner.py`, cwd the grading tree, its configuration on stdin (one JSON
# line), its report to file descriptor 3 (a judge-owned file the judge's shell opened for it).
#
# The repository's code runs in this process, so nothing here is secret from it: a submission that imports this
# module's frames can forge the report. What the design still buys (docs/TASKS.md, "Repository tasks: grading"):
#  - the configuration (with the report token and the canary names) is read and stdin closed BEFORE any repository
#    code is imported; printed text is never read (stdout goes to a log); the exit status is never trusted;
#  - the report carries the token, so a blind write to fd 3 or a report from another process is refused;
#  - the judge injects canary tests with unguessable names: one must fail, one must pass. A runner patched to say
#    "passed" for everything, or to drop failures, reports the failing canary wrongly, and the grade is 0.
#  - lying objects (always-equal and the like): every comparison of the repository's test modules and conftest files
#    (and unittest's assertEqual family) goes through a check that probes the compared values BEFORE the comparison
#    runs; a test that met one fails with the reason (the report's "lying"; _sg_build below). A third canary compares
#    a judge-made lying object: with the check disabled it would pass, and the grade is 0.
# A targeted forgery (read the token from memory, find the canaries by reading their file) is not stopped: the task's
# `info.grader.isolation` says "in-process" so a trainer can tell such tasks from harness-isolated ones.
import json
import os
import sys

_cfg = json.loads(sys.stdin.readline())
sys.stdin.close()
try:
    os.close(0)
except OSError:
    pass
_out = os.fdopen(3, "w", encoding="utf-8")
_token = _cfg["token"]
_root = _cfg["root"]
# pytest and every module of it are imported BEFORE the repository is put on sys.path: a submission's own `pytest.py`,
# `_pytest/` or `pluggy.py` at the root of the tree can then never stand in for the runner (modules already imported
# are taken from sys.modules). What pytest imports lazily later, and the repository's own import-time code, still run
# in this process: that is the in-process limit (docs/TASKS.md).
# The recipe's wheels (judge-built image content) come first, so a pinned pytest is the one imported.
sys.path[:0] = list(_cfg.get("site", []))
import pkgutil  # noqa: E402

import _pytest  # noqa: E402
import pytest  # noqa: E402

for _m in pkgutil.walk_packages(_pytest.__path__, "_pytest."):
    try:
        __import__(_m.name)
    except Exception:  # noqa: BLE001  (optional parts of pytest, e.g. for missing extras, stay unimported)
        pass
# ---- Lying objects: the runtime check (docs/TASKS.md, "Repository tasks: grading", 8) -------------------------------
# The static scan (sandgym_eq_scan.py) sees plain spellings only. Here every comparison the repository's own test
# modules and conftest files make (`a == b`, `!=`, `<`, `<=`, `>`, `>=`, `in`, `not in`: pytest's assertion rewriting
# hook compiles them into calls of `cmp` below) and unittest's assertEqual family is checked, BEFORE it runs, for a
# lying operand: an object (at any depth of either operand: list/tuple/dict/set items, instance attributes) that
#  - claims equality with a fresh object of a class made for the probe (or denies inequality with it), or orders
#    itself against it, or claims to contain it;
#  - claims equality with a far-off value of the other operand's type (the other operand + a random suffix, a
#    different int, another day, the list with one more item): equal to two different things;
#  - exits (SystemExit, os._exit is a lost report anyway) when compared.
# Probes run only for objects whose comparison method is NOT the judge's to trust. Trusted: methods implemented in C
# (int, str, datetime, ...), Python functions in files of the standard library and the image's site directories (pytest,
# pytest.approx), and files of the grading tree the submission did not change (the repository's tests, conftest
# files, its untouched sources). Two trusted objects lie by design: unittest.mock.ANY and a mock whose __eq__/__ne__
# was configured. The repository's tests use them on the expected side, so they are allowed only in a test module
# whose own code names them (`ANY`; `__eq__`/`__ne__`): what the judge cannot tell apart is such an object returned by
# the code under test INTO a test module that names it too (docs/TASKS.md says so).
import ast as _ast  # noqa: E402
import datetime as _dt  # noqa: E402
import types as _types  # noqa: E402
import unittest as _unittest  # noqa: E402
import unittest.mock as _umock  # noqa: E402

import _pytest.assertion.rewrite as _rw  # noqa: E402


def _sg_build():
    # Everything the check uses is bound here, before any repository code runs: a submission that later patches
    # builtins (type, isinstance, bool, repr) does not change what the check calls. Patching the check itself is what
    # the lying-object canary is for.
    _type = type
    _object = object
    _isinstance = isinstance
    _len = len
    _bool = bool
    _repr = repr
    _tuple_iter = tuple.__iter__
    _list_iter = list.__iter__
    _set_iter = set.__iter__
    _fset_iter = frozenset.__iter__
    _dict_items = dict.items
    _mro_of = type.__dict__["__mro__"].__get__
    _dict_of = type.__dict__["__dict__"].__get__
    _flags_of = type.__dict__["__flags__"].__get__
    _obj_getattr = object.__getattribute__
    _realpath = os.path.realpath
    _startswith = str.startswith
    _urandom = os.urandom
    _FunctionType = _types.FunctionType
    _WrapperDescr = _type(object.__eq__)
    _MethodDescr = _type(str.join)
    _ANY_T = _type(_umock.ANY)
    _NCM = _umock.NonCallableMock
    _DEFAULT = _umock.DEFAULT
    _MOCK_FILE = _umock.__file__
    _BaseExc = BaseException
    _Exc = Exception
    _SystemExit = SystemExit
    _KeyboardInterrupt = KeyboardInterrupt
    _sys_modules = sys.modules
    HEAP = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class made by Python code (a `class` statement or type())
    SAFE = frozenset(
        [
            int,
            float,
            complex,
            str,
            bytes,
            bool,
            _type(None),
            _type(Ellipsis),
            _object,
            _dt.datetime,
            _dt.date,
            _dt.time,
            _dt.timedelta,
        ]
    )
    SEQ = {list: _list_iter, tuple: _tuple_iter, set: _set_iter, frozenset: _fset_iter}
    OPS = {
        "eq": (lambda a, b: a == b, ("__eq__", "__ne__")),
        "ne": (lambda a, b: a != b, ("__eq__", "__ne__")),
        "lt": (lambda a, b: a < b, ("__lt__", "__gt__")),
        "le": (lambda a, b: a <= b, ("__le__", "__ge__")),
        "gt": (lambda a, b: a > b, ("__gt__", "__lt__")),
        "ge": (lambda a, b: a >= b, ("__ge__", "__le__")),
        "in": (lambda a, b: a in b, ("__contains__", "__iter__")),
        "notin": (lambda a, b: a not in b, ("__contains__", "__iter__")),
    }
    roots = [_realpath(p) + os.sep for p in sys.path if p and os.path.isdir(p)]
    tree_root = _realpath(_root) + os.sep
    changed = frozenset(_cfg.get("changed", []))
    modnames = {}  # test module path -> names its own code uses
    lying = {}  # node id -> reason
    current = [None]
    busy = [False]
    file_trust = {}

    def trusted_file(fn):
        t = file_trust.get(fn)
        if t is None:
            rp = _realpath(fn) if _isinstance(fn, str) and fn[:1] == "/" else ""
            if not rp:
                t = False
            elif any(_startswith(rp, r) for r in roots):
                t = True
            elif _startswith(rp, tree_root):
                rel = rp[_len(tree_root) :]
                t = rel not in changed and os.path.isfile(rp)
            else:
                t = False
            file_trust[fn] = t
        return t

    def trusted_class(k):
        # A class is the judge's to trust when its module is in a trusted file and holds it under its name (a class
        # made at run time and given a trusted __module__ is not held there).
        if not (_flags_of(k) & HEAP):
            return True
        d = _dict_of(k)
        mod = _sys_modules.get(d.get("__module__", ""))
        fn = getattr(mod, "__file__", None) if mod is not None else None
        if not fn or not trusted_file(fn):
            return False
        try:
            return _obj_getattr(mod, "__dict__").get(d.get("__qualname__", k.__name__)) is k
        except _Exc:
            return False

    def method_trust(t, name):
        """'c' (implemented in C), 'trusted', 'mock' (a mock's configured method), or 'untrusted'."""
        for k in _mro_of(t):
            d = _dict_of(k)
            if name not in d:
                continue
            f = d[name]
            ft = _type(f)
            if not (_flags_of(k) & HEAP):
                return "c"
            if (ft is _WrapperDescr or ft is _MethodDescr) and f.__objclass__ is k:
                return "c"
            if _NCM in _mro_of(k):
                # A mock class (each mock has its own): its magic methods are mock.py's proxies until configured.
                if _NCM in _mro_of(ft):
                    try:
                        if _obj_getattr(f, "_mock_return_value") is not _DEFAULT:
                            return "mock"
                        se = _obj_getattr(f, "_mock_side_effect")
                        if se is None or _type(se) is not _FunctionType or not trusted_file(se.__code__.co_filename):
                            return "mock"
                    except _Exc:
                        return "mock"
                    return "trusted"
                if ft is not _FunctionType:
                    return "trusted" if trusted_class(ft) else "mock"
                if f.__code__.co_filename == _MOCK_FILE:
                    return "mock"  # a function assigned to the mock's magic method (mock.py wraps it)
            if ft is _FunctionType:
                co = f.__code__
                home = getattr(_sys_modules.get(d.get("__module__", "")), "__file__", None)
                return (
                    "trusted"
                    if co.co_filename == home and trusted_file(co.co_filename) and trusted_class(k)
                    else "untrusted"
                )
            return "untrusted"
        return "c"

    def sentinel():
        k = _type("Value" + _urandom(4).hex(), (), {})
        return k()

    def far(v):
        t = _type(v)
        tag = _urandom(6).hex()
        if t is str:
            return [v + "\x00" + tag, tag]
        if t is bytes:
            return [v + b"\x00" + tag.encode()]
        if t is int:
            return [v ^ 0x5BD1E995A3, -v - 7919]
        if t is float:
            return [v * 1.5 + 12345.678] if v == v and v not in (float("inf"), float("-inf")) else []
        if t is list:
            return [v + [sentinel()]]
        if t is tuple:
            return [v + (sentinel(),)]
        if t is dict:
            w = dict(v)
            w[tag] = sentinel()
            return [w]
        if t is _dt.datetime or t is _dt.date:
            return [v + _dt.timedelta(days=3331)]
        return []

    def truthy(x):
        try:
            return _bool(x)
        except _Exc:
            return False

    EXITS = (_SystemExit, _KeyboardInterrupt, GeneratorExit)

    def probe(fn, want):
        """True when fn() came out as `want` (a lie); False when not, or inconclusive (it raised); "exit" on an exit."""
        try:
            return truthy(fn()) is want
        except EXITS:
            return "exit"
        except _Exc:
            return False

    def lies(o, code, other, top):
        """None, or (kind, why) when `o` lies. Runs the object's own comparison code (inconclusive when it raises)."""
        t = _type(o)
        if t in SAFE:
            return None
        _, names = OPS[code]
        kind = "c"
        for n in names:
            k = method_trust(t, n)
            if k == "mock":
                return ("mock:" + n, "a mock whose " + n + " was configured")
            if k == "untrusted":
                kind = "untrusted"
        if t is _ANY_T or _ANY_T in _mro_of(t):
            return ("ANY", "unittest.mock.ANY (equal to everything)")
        if kind != "untrusted":
            return None
        s = sentinel()
        if code in ("eq", "ne"):
            tries = [
                (lambda: o == s, True, "equal to an object it has never seen"),
                (lambda: o != s, False, "not unequal to an object it has never seen"),
            ]
            if top:
                for p in far(other):
                    why = "equal to " + _repr(other)[:60] + " and to a different value of its type"
                    tries.append((lambda p=p: o == p, True, why))
                    tries.append((lambda p=p: o != p, False, why))
        elif code == "in":
            tries = [(lambda: s in o, True, "claims to contain an object it has never seen")]
        else:
            fn, _ = OPS[code]
            tries = [(lambda: fn(o, s), True, "orders itself against an object it has never seen")]
        for attempt, want, why in tries:
            r = probe(attempt, want)
            if r == "exit":
                return ("", "its comparison tried to end the test run")
            if r is True:
                return ("", why)
        return None

    NOTHING = sentinel()  # "no counterpart"

    def items_of(v, mro):
        """The items of a builtin container (its C iteration, not an override), as (key or index, value); else None."""
        if dict in mro:
            return [(k, x) for k, x in _dict_items(v)]
        for base, it in SEQ.items():
            if base in mro:
                if base is list or base is tuple:
                    return [(i, x) for i, x in enumerate(it(v))]
                return [(None, x) for x in it(v)]
        return None

    def walk(v, cp, out, budget, depth):
        # Every object reachable through containers and instance attributes, bounded (depth 4, 2000 objects), each with
        # its counterpart in the other operand where both have the same shape (the value it will be compared with).
        if budget[0] <= 0 or depth > 4:
            return
        budget[0] -= 1
        t = _type(v)
        if t in SAFE:
            return
        out.append((v, cp))
        mro = _mro_of(t)
        try:
            mine = items_of(v, mro)
            if mine is None and _flags_of(t) & HEAP:
                d = _obj_getattr(v, "__dict__")
                mine = list(d.items()) if _type(d) is dict else None
                theirs = None
                if mine is not None and cp is not NOTHING and _type(cp) is t:
                    dc = _obj_getattr(cp, "__dict__")
                    theirs = dict(dc) if _type(dc) is dict else None
            elif mine is not None and cp is not NOTHING and _type(cp) in (list, tuple, dict):
                theirs = dict(items_of(cp, _mro_of(_type(cp))))
            else:
                theirs = None
            for k, x in mine or ():
                if k is not None and _type(k) not in SAFE:
                    walk(k, NOTHING, out, budget, depth + 1)
                walk(
                    x,
                    theirs.get(k, NOTHING) if theirs is not None and k is not None else NOTHING,
                    out,
                    budget,
                    depth + 1,
                )
        except _Exc:
            pass

    def excused(why, mod):
        names = modnames.get(mod, ())
        if why == "ANY":
            return "ANY" in names
        if why[:5] == "mock:":
            return why[5:] in names
        return False

    REFLECT = {"eq": "eq", "ne": "ne", "lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}

    def check(code, a, b, mod):
        if code in ("in", "notin"):
            sides = ((a, b, "eq", False), (b, a, "in", True))
        else:
            sides = ((a, b, code, True), (b, a, REFLECT[code], True))
        for top, other, c, far_ok in sides:
            objs = []
            walk(top, other, objs, [2000], 0)
            for i, (o, cp) in enumerate(objs):
                first = i == 0 and o is top
                r = lies(o, c if first else "eq", cp, cp is not NOTHING and (far_ok or not first))
                if r is not None and not excused(r[0], mod):
                    return _type(o).__name__ + ": " + r[1]
        return None

    def flag(reason):
        nid = current[0] or "<outside a test>"
        if nid not in lying:
            lying[nid] = reason[:300]

    def verdict(code, a, b, mod):
        if busy[0]:
            return None
        busy[0] = True
        try:
            return check(code, a, b, mod)
        except _BaseExc:
            return "the lying-object check could not inspect the operands"
        finally:
            busy[0] = False

    def cmp(code, mod, a, b):
        reason = verdict(code, a, b, mod)
        if reason is not None:
            flag(reason)
            raise AssertionError("sandgym: lying object in a comparison: " + reason)
        return OPS[code][0](a, b)

    CODES = {
        _ast.Eq: "eq",
        _ast.NotEq: "ne",
        _ast.Lt: "lt",
        _ast.LtE: "le",
        _ast.Gt: "gt",
        _ast.GtE: "ge",
        _ast.In: "in",
        _ast.NotIn: "notin",
    }

    def instrument(tree, alias, key):
        """One pass over a test module: the names its code uses, and each single comparison turned, in place, into
        `alias.cmp(code, key, left, right)` (`is` and chained comparisons are left as they are: a documented limit).
        In place and in one walk because a NodeTransformer's visit of every node cost about as much as pytest's own
        rewrite."""
        out = set()
        add = out.add
        Name, Attribute, alias_t, Constant, Compare, Call, Load = (
            _ast.Name,
            _ast.Attribute,
            _ast.alias,
            _ast.Constant,
            _ast.Compare,
            _ast.Call,
            _ast.Load,
        )
        for n in _ast.walk(tree):
            t = _type(n)
            if t is Name:
                add(n.id)
            elif t is Attribute:
                add(n.attr)
            elif t is alias_t:
                add(n.name.rsplit(".", 1)[-1])
                if n.asname:
                    add(n.asname)
            elif t is Constant:
                if _type(n.value) is str and _len(n.value) < 200:
                    out.update(n.value.split("."))
            elif t is Compare and _len(n.ops) == 1:
                code = CODES.get(_type(n.ops[0]))
                if code is None:
                    continue
                # The children were queued by the walk before this node was yielded: they are still visited.
                left, right = n.left, n.comparators[0]
                loc = {
                    "lineno": n.lineno,
                    "col_offset": n.col_offset,
                    "end_lineno": n.end_lineno,
                    "end_col_offset": n.end_col_offset,
                }
                n.__class__ = Call
                del n.left, n.ops, n.comparators
                n.func = Attribute(value=Name(id=alias, ctx=Load(), **loc), attr="cmp", ctx=Load(), **loc)
                n.args = [Constant(value=code, **loc), Constant(value=key, **loc), left, right]
                n.keywords = []
        return frozenset(out)

    modname = "_sandgym_eq_" + _urandom(8).hex()
    alias = "@sandgym_eq"

    def transform(mod, path):
        key = str(path)
        modnames[key] = instrument(mod, alias, key)
        pos = 0
        for i, item in enumerate(mod.body):
            if (
                i == 0
                and _isinstance(item, _ast.Expr)
                and _isinstance(item.value, _ast.Constant)
                and _isinstance(item.value.value, str)
            ):
                pos = 1
            elif _isinstance(item, _ast.ImportFrom) and item.module == "__future__" and item.level == 0:
                pos = i + 1
            else:
                break
        imp = _ast.Import(names=[_ast.alias(name=modname, asname=alias)])
        mod.body.insert(pos, imp)
        # Every node made here has its location already (no fix_missing_locations over the whole module: that walk
        # cost more than the rest of the check).
        for n in (imp, *imp.names):
            n.lineno = n.end_lineno = 1
            n.col_offset = n.end_col_offset = 0

    m = _types.ModuleType(modname)
    m.cmp = cmp
    _sys_modules[modname] = m
    orig_rewrite = _rw.rewrite_asserts

    def rewrite_asserts(mod, source, module_path=None, config=None):
        # Before pytest's own rewrite: only the module's own comparisons are instrumented (pytest's rewrite adds
        # comparisons of its own, e.g. `"name" in locals()`, that must not be probed).
        transform(mod, module_path)
        return orig_rewrite(mod, source, module_path, config)

    _rw.rewrite_asserts = rewrite_asserts
    # A rewritten module is never taken from a bytecode cache: only a module compiled here went through the check.
    _rw._read_pyc = lambda *a, **k: None

    def module_of(tc):
        mod = _sys_modules.get(_type(tc).__module__)
        return str(getattr(mod, "__file__", "")) if mod is not None else ""

    def wrap(fn, code, swap=False):
        def checked(self, first, second, *args, **kwargs):
            a, b = (second, first) if swap else (first, second)
            reason = verdict(code, a, b, module_of(self))
            if reason is not None:
                flag(reason)
                raise self.failureException("sandgym: lying object in a comparison: " + reason)
            return fn(self, first, second, *args, **kwargs)

        checked.__wrapped__ = fn
        return checked

    TC = _unittest.TestCase
    for n, code in (
        ("assertEqual", "eq"),
        ("assertNotEqual", "ne"),
        ("assertListEqual", "eq"),
        ("assertTupleEqual", "eq"),
        ("assertDictEqual", "eq"),
        ("assertSetEqual", "eq"),
        ("assertSequenceEqual", "eq"),
        ("assertMultiLineEqual", "eq"),
        ("assertAlmostEqual", "eq"),
        ("assertIn", "in"),
        ("assertNotIn", "notin"),
        ("assertGreater", "gt"),
        ("assertGreaterEqual", "ge"),
        ("assertLess", "lt"),
        ("assertLessEqual", "le"),
    ):
        setattr(TC, n, wrap(TC.__dict__[n], code))
    # unittest's own dispatch table holds the unwrapped type-specific methods by name: it keeps calling them.
    return lying, current


_lying, _current_test = _sg_build()

# Then the repository's import roots, first (its package is not installed), before the wheels and the system's.
sys.path[:0] = [os.path.normpath(os.path.join(_root, p)) for p in _cfg["python_path"]]
os.chdir(_root)

_results = {}
_collect_errors = []


class _SandgymRecorder:
    """Per-test outcome from every phase: an error in setup or teardown is an error, a skip is not a pass."""

    def pytest_runtest_logstart(self, nodeid, location):
        _current_test[0] = nodeid

    def pytest_runtest_logfinish(self, nodeid, location):
        _current_test[0] = None

    def pytest_runtest_logreport(self, report):
        nid = report.nodeid
        prev = _results.get(nid)
        if report.when == "call":
            if report.passed:
                outcome = "passed"
            elif report.skipped:
                outcome = "skipped"
            else:
                outcome = "failed"
            if prev in ("error", "skipped"):
                outcome = prev
            if nid in _lying:
                outcome = "failed"  # whatever the test made of the AssertionError (pytest.raises, a bare except)
        else:
            if report.failed:
                outcome = "error"
            elif report.skipped:
                outcome = "skipped" if prev is None else prev
            else:
                outcome = prev
            if outcome is None:
                return
        _results[nid] = outcome

    def pytest_collectreport(self, report):
        if report.failed:
            _collect_errors.append(report.nodeid)


_status = None
try:
    _status = int(pytest.main(_cfg["args"], plugins=[_SandgymRecorder()]))
finally:
    _out.write(
        json.dumps(
            {
                "token": _token,
                "status": _status,
                "tests": _results,
                "collect_errors": _collect_errors[:200],
                "lying": dict(list(_lying.items())[:200]),
            }
        )
    )
    _out.flush()
os._exit(0)
