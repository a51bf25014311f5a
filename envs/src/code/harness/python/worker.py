# sandgym harness worker: runs workspace code AS THE AGENT UID, reached by the judge (sandgym_harness.py)
# over two pipes with length-prefixed JSON frames. Started as `python3 -I -S -B -c <this source> <config>`:
# no cwd, no PYTHON* variables, no site hooks on sys.path, no bytecode. Everything this file needs is
# imported HERE, before /workspace goes on sys.path, so a workspace json.py / cmd.py / pdb.py can neither
# break nor replace it. The judge treats whatever this process says as hostile input (workspace code runs
# in this very process and may rewrite it); this file only has to be correct for honest workspaces.
import base64
import builtins
import datetime
import decimal
import importlib
import json
import os
import secrets
import signal
import stat as stat_mod
import struct
import subprocess
import sys
import types

# Pulled in now so that nothing below imports lazily once /workspace is on sys.path.
import encodings.latin_1  # noqa: F401  (str.encode fallbacks)
import selectors  # noqa: F401  (subprocess.communicate)

PROTOCOL = 1
MAX_FRAME = 8 * 1024 * 1024
MAX_DEPTH = 64
MAX_NODES = 1_000_000
MAX_HANDLES = 100_000

CONFIG = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
WORKSPACE = CONFIG.get("workspace", "/workspace")

# Protocol fds: private copies of stdin/stdout; 0, 1 and 2 then point at /dev/null so that workspace
# prints cannot corrupt the frames (a deliberate write to the protocol fd is the judge's problem).
RIN = os.dup(0)
ROUT = os.dup(1)
_null = os.open(os.devnull, os.O_RDWR)
for _fd in (0, 1, 2):
    os.dup2(_null, _fd)
os.close(_null)

_loads = json.loads
_dumps = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode
_pack = struct.Struct(">I").pack
_unpack = struct.Struct(">I").unpack

# Modules loaded before the workspace is importable: names the workspace may not claim.
PRELOADED = frozenset(name.split(".")[0] for name in sys.modules)


class Fatal(Exception):
    """The judge broke the protocol (never expected): the worker exits."""


class Unencodable(Exception):
    pass


def _read_exact(n):
    chunks = []
    while n > 0:
        b = os.read(RIN, min(n, 1 << 20))
        if not b:
            raise EOFError
        chunks.append(b)
        n -= len(b)
    return b"".join(chunks)


def recv():
    (n,) = _unpack(_read_exact(4))
    if n > MAX_FRAME:
        raise Fatal("frame too large")
    return _loads(_read_exact(n).decode("utf-8"))


def send(msg):
    data = _dumps(msg).encode("utf-8")
    if len(data) > MAX_FRAME:
        raise Unencodable("message larger than %d bytes" % MAX_FRAME)
    buf = _pack(len(data)) + data
    view = memoryview(buf)
    while view:
        k = os.write(ROUT, view)
        view = view[k:]


# ---- handles ---------------------------------------------------------------------------------------
objects = {}


def new_handle(obj):
    if len(objects) >= MAX_HANDLES:
        raise Unencodable("too many live workspace handles (%d)" % MAX_HANDLES)
    hid = secrets.token_hex(16)
    objects[hid] = obj
    return hid


def kind_of(v):
    if isinstance(v, types.ModuleType):
        return "module"
    if isinstance(v, type):
        return "class"
    if hasattr(type(v), "__next__"):
        return "iter"
    if callable(v):
        return "call"
    return "obj"


def exc_class_desc(cls, depth=0):
    if depth > 16:
        return {"b": "Exception"}
    if getattr(builtins, cls.__name__, None) is cls:
        return {"b": cls.__name__}
    bases = [exc_class_desc(b, depth + 1) for b in cls.__bases__[:8] if isinstance(b, type) and issubclass(b, BaseException)]
    return {
        "n": str(cls.__name__)[:100],
        "m": str(getattr(cls, "__module__", "") or "")[:200],
        "q": str(getattr(cls, "__qualname__", cls.__name__) or "")[:200],
        "h": new_handle(cls),
        "bases": bases or [{"b": "Exception"}],
    }


# ---- judge-side objects seen from here ----------------------------------------------------------------
class JudgeCallable:
    __slots__ = ("_sg_id",)

    def __init__(self, cid):
        self._sg_id = cid

    def __call__(self, *args, **kwargs):
        return call_judge({"op": "callback", "fn": self._sg_id, "args": enc(list(args)), "kwargs": enc_kwargs(kwargs)})

    def __repr__(self):
        return "<judge callable>"


class JudgeIterator:
    __slots__ = ("_sg_id",)

    def __init__(self, iid):
        self._sg_id = iid

    def __iter__(self):
        return self

    def __next__(self):
        return call_judge({"op": "jnext", "it": self._sg_id})

    def __repr__(self):
        return "<judge iterator>"


# ---- values ------------------------------------------------------------------------------------------
class _Budget:
    __slots__ = ("n",)

    def __init__(self):
        self.n = 0


def enc(v, depth=0, budget=None, key=False):
    if budget is None:
        budget = _Budget()
    budget.n += 1
    if budget.n > MAX_NODES:
        raise Unencodable("more than %d values" % MAX_NODES)
    if depth > MAX_DEPTH:
        raise Unencodable("nested deeper than %d" % MAX_DEPTH)
    t = type(v)
    if v is None or t is bool or t is str:
        return v
    if t is int:
        if v.bit_length() > 14000:
            raise Unencodable("int too large")
        return v
    if t is float:
        if v != v:
            return {"f": "nan"}
        if v in (float("inf"), float("-inf")):
            return {"f": "inf" if v > 0 else "-inf"}
        return v
    d = depth + 1
    if t is list or (isinstance(v, list) and not key):
        return [enc(x, d, budget, key) for x in list.__iter__(v)]
    if t is tuple or isinstance(v, tuple):
        return {"t": [enc(x, d, budget, key) for x in tuple.__iter__(v)]}
    if t is dict or isinstance(v, dict):
        return {"d": [[enc(k, d, budget, True), enc(x, d, budget, key)] for k, x in dict.items(v)]}
    if t is set or t is frozenset:
        return {"s" if t is set else "fs": [enc(x, d, budget, True) for x in v]}
    if t is bytes or t is bytearray or t is memoryview:
        return {"b": base64.b64encode(bytes(v)).decode("ascii")}
    if t is range:
        return {"r": [v.start, v.stop, v.step]}
    if t is decimal.Decimal:
        return {"dec": str(v)}
    if t is datetime.datetime:
        return {"dt": v.isoformat()}
    if t is datetime.date:
        return {"date": v.isoformat()}
    if t is datetime.time:
        return {"tm": v.isoformat()}
    if t is datetime.timedelta:
        return {"td": [v.days, v.seconds, v.microseconds]}
    if t is JudgeCallable:
        return {"cb": v._sg_id}
    if t is JudgeIterator:
        return {"it": v._sg_id}
    if key:
        raise Unencodable("dict keys and set items must be plain values, got %s" % t.__name__)
    if isinstance(v, type) and issubclass(v, BaseException):
        return {"x": exc_class_desc(v)}
    return {"h": new_handle(v), "k": kind_of(v), "n": str(getattr(t, "__name__", "object"))[:100]}


def enc_kwargs(kwargs):
    return {str(k): enc(x) for k, x in kwargs.items()}


def dec(v, depth=0):
    # The judge is trusted: this only has to invert its encoder.
    t = type(v)
    if t is list:
        return [dec(x, depth + 1) for x in v]
    if t is not dict:
        return v
    (tag, x), = v.items()
    if tag == "t":
        return tuple(dec(i, depth + 1) for i in x)
    if tag == "d":
        return {dec(k, depth + 1): dec(i, depth + 1) for k, i in x}
    if tag == "s":
        return {dec(i, depth + 1) for i in x}
    if tag == "fs":
        return frozenset(dec(i, depth + 1) for i in x)
    if tag == "b":
        return base64.b64decode(x)
    if tag == "f":
        return float(x)
    if tag == "r":
        return range(*x)
    if tag == "dec":
        return decimal.Decimal(x)
    if tag == "dt":
        return datetime.datetime.fromisoformat(x)
    if tag == "date":
        return datetime.date.fromisoformat(x)
    if tag == "tm":
        return datetime.time.fromisoformat(x)
    if tag == "td":
        return datetime.timedelta(days=x[0], seconds=x[1], microseconds=x[2])
    if tag == "h":
        try:
            return objects[x]
        except KeyError:
            raise LookupError("unknown workspace handle") from None
    if tag == "cb":
        return JudgeCallable(x)
    if tag == "it":
        return JudgeIterator(x)
    raise Fatal("unknown tag %r" % tag)


def exc_desc(e):
    try:
        args = enc(list(e.args))
    except Exception:
        args = [repr(a)[:2000] for a in e.args[:16]] if isinstance(getattr(e, "args", None), tuple) else []
    try:
        text = str(e)[:2000]
    except BaseException:
        text = ""
    return {"cls": exc_class_desc(type(e)), "args": args, "str": text}


# ---- the conversation --------------------------------------------------------------------------------
_seq = [0]


def call_judge(msg):
    """Asks the judge something while one of its calls is pending (the only time this can run)."""
    _seq[0] += 1
    cid = _seq[0]
    msg["id"] = cid
    send(msg)
    reply = serve(cid)
    op = reply.get("op")
    if op == "stop":
        raise StopIteration
    if op == "raise":
        name = reply.get("b")
        cls = getattr(builtins, name, None) if isinstance(name, str) else None
        if not (isinstance(cls, type) and issubclass(cls, Exception)) or cls is StopIteration:
            cls = Exception
        raise cls(*(dec(reply.get("args", [])) or []))
    return dec(reply.get("value"))


def serve(waiting_for):
    """Serves judge requests until the reply to our own pending request `waiting_for` arrives."""
    while True:
        msg = recv()
        if not isinstance(msg, dict):
            raise Fatal("not an object")
        op = msg.get("op")
        if op in ("return", "raise", "stop"):
            if waiting_for is None or msg.get("id") != waiting_for:
                raise Fatal("unexpected reply")
            return msg
        for hid in msg.get("rel", ()):
            objects.pop(hid, None)
        handle_request(msg)


def reply_value(rid, value):
    try:
        send({"op": "return", "id": rid, "value": enc(value)})
    except Unencodable as e:
        send({"op": "raise", "id": rid, "harness": "unencodable", "str": str(e)[:500]})


def handle_request(msg):
    rid = msg.get("id")
    op = msg.get("op")
    fn = OPS.get(op)
    if fn is None:
        raise Fatal("unknown op %r" % op)
    try:
        result = fn(msg)
    except StopIteration as e:
        if op in ("next",):
            send({"op": "stop", "id": rid})
            return
        send_exc(rid, e)
        return
    except BaseException as e:  # SystemExit, KeyboardInterrupt, ... are reported, never obeyed
        send_exc(rid, e)
        return
    reply_value(rid, result)


def send_exc(rid, e):
    try:
        send({"op": "raise", "id": rid, "exc": exc_desc(e)})
    except Unencodable:
        send({"op": "raise", "id": rid, "exc": {"cls": {"b": "Exception"}, "args": [], "str": ""}})


def obj(msg, key="obj"):
    return dec({"h": msg[key]})


NAME_OK = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.")


def op_import(msg):
    name = msg["name"]
    if not isinstance(name, str) or not name or len(name) > 200 or not set(name) <= NAME_OK or any(not p or p[0].isdigit() for p in name.split(".")):
        raise ValueError("invalid module name %r" % (name,))
    if name.split(".")[0] in PRELOADED:
        raise ImportError("%r names a module the harness worker itself uses: task modules must not shadow standard modules" % name)
    return importlib.import_module(name)


def op_call(msg):
    return obj(msg)(*dec(msg.get("args", [])), **{k: dec(v) for k, v in msg.get("kwargs", {}).items()})


def op_call_many(msg):
    f = obj(msg)
    out = []
    kwl = msg.get("kwargs_list")
    for i, a in enumerate(msg["args_list"]):
        kw = {k: dec(v) for k, v in kwl[i].items()} if kwl else {}
        try:
            out.append(f(*dec(a), **kw))
        except BaseException as e:
            if not msg.get("return_exceptions"):
                raise
            out.append(_CaughtExc(e))
    return _Many(out)


class _CaughtExc:
    __slots__ = ("e",)

    def __init__(self, e):
        self.e = e


class _Many:
    __slots__ = ("items",)

    def __init__(self, items):
        self.items = items


class _Ref:
    """A result the judge asked to keep BY REFERENCE: encoded as a handle whatever its type."""

    __slots__ = ("v",)

    def __init__(self, v):
        self.v = v


def op_call_ref(msg):
    return _Ref(op_call(msg))


def op_item_ref(msg):
    o = obj(msg)
    for k in dec(msg.get("keys", [])):
        o = o[k]
    return _Ref(o)


def op_drain(msg):
    it = iter(obj(msg))
    limit = int(msg.get("limit", 100_000))
    out = []
    for x in it:
        out.append(x)
        if len(out) > limit:  # one more than allowed: the judge reports it
            break
    return out


def op_take(msg):
    it = iter(obj(msg))
    n = int(msg["n"])
    out = []
    while len(out) < n:
        try:
            out.append(next(it))
        except StopIteration:
            break
    return out


def op_next(msg):
    return next(obj(msg))


def op_str(msg):
    s = str(obj(msg))
    return s if type(s) is str else str.__str__(s)


def op_type_name(msg):
    v = dec(msg["value"])
    return type(v).__name__


def op_isinstance(msg):
    return isinstance(dec(msg["value"]), dec(msg["cls"]))


def _run(msg):
    argv = [str(a) for a in msg["argv"]]
    cwd = msg.get("cwd") or WORKSPACE
    cwd = os.path.join(WORKSPACE, cwd)
    env = {"PATH": CONFIG.get("path", "/usr/local/bin:/usr/bin:/bin"), "HOME": "/tmp", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "SANDGYM_WORKSPACE": WORKSPACE}
    env.update({str(k): str(v) for k, v in (msg.get("env") or {}).items()})
    stdin = dec(msg.get("stdin"))
    data = stdin if isinstance(stdin, bytes) else b""
    cap = int(msg.get("max_output", 1 << 20))
    p = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True, close_fds=True)
    timed_out = False
    try:
        out, err = p.communicate(data, timeout=float(msg.get("timeout", 30)))
    except subprocess.TimeoutExpired:
        timed_out = True
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except OSError:
            pass
        out, err = p.communicate()
    try:
        os.killpg(p.pid, signal.SIGKILL)  # what it left in its group
    except OSError:
        pass
    return {"exit_code": None if timed_out else p.returncode, "stdout": out[:cap], "stderr": err[:cap], "timed_out": timed_out}


def _p(path):
    return os.path.join(WORKSPACE, str(path))


def _read(path, max_bytes):
    with open(_p(path), "rb") as fh:
        return fh.read(int(max_bytes) + 1)  # one byte more than allowed: the judge reports it


def _write(path, data, mode):
    p = _p(path)
    d = os.path.dirname(p)
    if d:
        os.makedirs(d, exist_ok=True)
    with open(p, "wb") as fh:
        fh.write(data.encode("utf-8") if isinstance(data, str) else bytes(data))
    if mode is not None:
        os.chmod(p, int(mode))
    return None


def _tree(path):
    root = _p(path)
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        for n in dirnames:
            out.append((n if rel == "." else rel + "/" + n) + "/")
        for n in filenames:
            out.append(n if rel == "." else rel + "/" + n)
    return sorted(out)


def _stat(path):
    p = _p(path)
    st = os.lstat(p)
    return {
        "size": st.st_size,
        "mode": stat_mod.S_IMODE(st.st_mode),
        "mtime": st.st_mtime,
        "is_file": stat_mod.S_ISREG(st.st_mode),
        "is_dir": stat_mod.S_ISDIR(st.st_mode),
        "is_symlink": stat_mod.S_ISLNK(st.st_mode),
        "is_executable": os.access(p, os.X_OK) and not stat_mod.S_ISDIR(st.st_mode),
    }


def _remove(path):
    p = _p(path)
    if os.path.isdir(p) and not os.path.islink(p):
        os.rmdir(p)
    else:
        os.unlink(p)


def _tmpdir():
    base = CONFIG.get("tmp", "/tmp")
    while True:
        p = os.path.join(base, "sandgym-" + secrets.token_hex(8))
        try:
            os.mkdir(p, 0o700)
            return p
        except FileExistsError:
            continue


FS = {
    "read_file": lambda a: _read(a[0], a[1]),
    "write_file": lambda a: _write(a[0], a[1], a[2]),
    "exists": lambda a: os.path.exists(_p(a[0])),
    "isfile": lambda a: os.path.isfile(_p(a[0])),
    "isdir": lambda a: os.path.isdir(_p(a[0])),
    "listdir": lambda a: sorted(os.listdir(_p(a[0]))),
    "tree": lambda a: _tree(a[0]),
    "mkdir": lambda a: os.makedirs(_p(a[0]), exist_ok=True) if a[1] else os.mkdir(_p(a[0])),
    "remove": lambda a: _remove(a[0]),
    "chmod": lambda a: os.chmod(_p(a[0]), int(a[1])),
    "utime": lambda a: os.utime(_p(a[0]), (float(a[1][0]), float(a[1][1]))),
    "stat": lambda a: _stat(a[0]),
    "tmpdir": lambda a: _tmpdir(),
}


def op_fs(msg):
    return FS[msg["fn"]](dec(msg.get("args", [])))


OPS = {
    "import": op_import,
    "getattr": lambda m: getattr(obj(m), m["name"]),
    "setattr": lambda m: setattr(obj(m), m["name"], dec(m["value"])),
    "delattr": lambda m: delattr(obj(m), m["name"]),
    "call": op_call,
    "call_many": op_call_many,
    "getitem": lambda m: obj(m)[dec(m["key"])],
    "setitem": lambda m: obj(m).__setitem__(dec(m["key"]), dec(m["value"])),
    "delitem": lambda m: obj(m).__delitem__(dec(m["key"])),
    "len": lambda m: len(obj(m)),
    "contains": lambda m: dec(m["item"]) in obj(m),
    "iter": lambda m: iter(obj(m)),
    "next": op_next,
    "str": op_str,
    "drain": op_drain,
    "take": op_take,
    "type_name": op_type_name,
    "isinstance": op_isinstance,
    "run": _run,
    "fs": op_fs,
    "ping": lambda m: None,
    "ref": lambda m: _Ref(dec(m["value"])),
    "value": lambda m: obj(m),
    "call_ref": op_call_ref,
    "item_ref": op_item_ref,
}

_base_enc = enc


def enc(v, depth=0, budget=None, key=False):  # noqa: F811  (results of call_many carry caught exceptions)
    if type(v) is _Many:
        b = _Budget()
        return {"many": [_base_enc(x, 1, b) if type(x) is not _CaughtExc else {"exc": exc_desc(x.e)} for x in v.items]}
    if type(v) is _Ref:
        o = v.v
        return {"h": new_handle(o), "k": kind_of(o), "n": str(getattr(type(o), "__name__", "object"))[:100]}
    return _base_enc(v, depth, budget, key)


def main():
    os.chdir(WORKSPACE)
    sys.path.insert(0, WORKSPACE)
    sys.dont_write_bytecode = True
    sys.argv = ["worker"]
    send({"op": "ready", "protocol": PROTOCOL, "pid": os.getpid()})
    try:
        serve(None)
    except (EOFError, Fatal):
        pass
    os._exit(0)


main()
