# sandgym's pre-started pytest (grader-plan.ts, PYTEST_SERVER_PY). Started as the JUDGE by the pool's prepare
# command on a fresh grading sandbox, before any submission exists in it. It pays the interpreter's start and
# the import of pytest and its default plugins (~0.3 s, most of a quiet grading) ahead of time, then waits for
# ONE grading request on a FIFO in a directory only the judge can open, runs it in this process and exits.
#
#   python3 -I -B - <server dir>    (this program on stdin)
#
# The parent returns once the server is ready (exit 0) or could not start (exit 3); the server itself lives
# on in its own session with stdin from /dev/null and its output in <server dir>/server.log.
#
# The request is one line, the grading root <judge dir>/grade-<hex>: its server-request.json (written by the
# judge, like every file there) holds the cwd, the environment and pytest's arguments: the same ones the
# direct run (run.sh) would exec. The server writes <root>/out/started before it runs anything and
# <root>/out/server-status after pytest returned; run.sh waits on <server dir>/lock, held by the server for
# its whole life, so a server killed by anything still ends the wait.
import os
import sys

srv = sys.argv[1]
# The agent uid the harness worker drops to: from the judge's environment when the server started.
agent_uid = os.environ.get("SANDGYM_AGENT_UID", "")
judge_dir = os.path.dirname(os.path.realpath(srv))
ready_r, ready_w = os.pipe()
if os.fork():
    os.close(ready_w)
    sys.exit(0 if os.read(ready_r, 1) == b"1" else 3)
os.close(ready_r)
os.setsid()
null = os.open("/dev/null", os.O_RDWR)
log = os.open(os.path.join(srv, "server.log"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
os.dup2(null, 0)
os.dup2(log, 1)
os.dup2(log, 2)
os.close(null)
os.close(log)

import fcntl  # noqa: E402

lock = os.open(os.path.join(srv, "lock"), os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(lock, fcntl.LOCK_EX)

import importlib  # noqa: E402
import json  # noqa: E402
import re  # noqa: E402
import signal  # noqa: E402
import tempfile  # noqa: E402

import pytest  # noqa: E402
from _pytest.config import default_plugins  # noqa: E402

# The standard modules the harness (sandgym_harness.py) imports, so a grading pays only for its own module.
import base64, contextlib, dataclasses, datetime, decimal, secrets, select, struct, subprocess  # noqa: E401, E402, F401

for name in default_plugins:
    try:
        importlib.import_module("_pytest." + name)
    except Exception:  # a plugin this pytest lacks: the run imports what it has, as a direct run would
        pass

# The harness module every grading loads (sandgym_harness.py), compiled now: its compile is ~15-50 ms of the critical
# path otherwise. The prepare command puts its source before this program (HARNESS_SOURCE); a grading uses this code
# only when its own harness file holds exactly that source, and compiles that file itself otherwise.
try:
    harness_code = compile(HARNESS_SOURCE, "sandgym_harness.py", "exec")  # noqa: F821
except Exception:  # no source given, or it does not compile: the grading compiles its own file, as before
    HARNESS_SOURCE = None
    harness_code = None


def with_filename(code, filename):
    """The code object with every nested code object's file name set to the module's real path (tracebacks)."""
    consts = tuple(with_filename(c, filename) if isinstance(c, type(code)) else c for c in code.co_consts)
    return code.replace(co_filename=filename, co_consts=consts)


def warm_up():
    """
    One pytest run on a throw-away test file of the judge's, shaped like a grading's (an ini, a rootdir, the junit
    report, native tracebacks, a pass, a failure, a parametrized test), before any submission exists here. pytest
    imports much of itself only on its first run (argument parsing, the terminal and junit writers, collection,
    fixtures, failure reports) and fills its caches: 25-30 ms of a paced py-slugify grading here (A/B, BENCHMARKS.md),
    for 50-100 ms of this process's time before it is ready. Whatever the run added to sys.modules from
    the throw-away directory, sys.path and the cwd are put back, so the grading's run imports its own files as a
    fresh pytest would. A failing warm-up changes nothing a grading relies on: it only leaves more to import.
    """
    import io
    import shutil
    import time

    t0 = time.monotonic()
    wdir = os.path.join(srv, "warm-up")
    shutil.rmtree(wdir, ignore_errors=True)
    os.mkdir(wdir, 0o700)
    path0, cwd0, mods0 = list(sys.path), os.getcwd(), set(sys.modules)
    try:
        with open(os.path.join(wdir, "pytest.ini"), "w") as fh:
            fh.write("[pytest]\naddopts =\npython_files = test_*.py\njunit_family = xunit2\njunit_logging = no\n")
        with open(os.path.join(wdir, "test_sandgym_warm_up.py"), "w") as fh:
            fh.write(
                "import pytest\n"
                "@pytest.fixture\ndef v():\n    return 1\n"
                "@pytest.mark.parametrize('x', [1, 2])\ndef test_pass(v, x):\n    assert v + x > x\n"
                "def test_fail():\n    assert [1] == [2]\n"
                "def test_raise():\n    raise ValueError('warm-up')\n"
            )
        os.chdir(wdir)
        args = ["-c", os.path.join(wdir, "pytest.ini"), f"--rootdir={wdir}", f"--confcutdir={wdir}", "-p", "no:cacheprovider"]
        args += ["-o", "addopts=", f"--basetemp={wdir}/tmp", f"--junitxml={wdir}/report.xml", "--assert=plain", "--tb=native", "-q"]
        with contextlib.redirect_stdout(io.StringIO()):
            code = pytest.main([*args, "test_sandgym_warm_up.py"])
        # 1: tests failed, as they must here; anything else is worth a line in the log, and nothing more.
        print(f"warm-up: pytest exited {int(code)} in {(time.monotonic() - t0) * 1000:.0f} ms", file=sys.stderr, flush=True)
    except BaseException as e:  # noqa: BLE001  (SystemExit included: the server must live on)
        print(f"warm-up failed: {e!r}", file=sys.stderr, flush=True)
    finally:
        os.chdir(cwd0)
        sys.path[:] = path0
        for name in set(sys.modules) - mods0:
            f = getattr(sys.modules.get(name), "__file__", None) or ""
            if name.startswith("test_sandgym_warm_up") or name == "conftest" or f.startswith(wdir + os.sep):
                del sys.modules[name]
        shutil.rmtree(wdir, ignore_errors=True)


warm_up()

# The request pipe: opened read-write, so a grading's write lands even before this process reads, and never
# blocks the writer; created under a temporary name so run.sh never sees a FIFO without a reader.
go = os.path.join(srv, "go")
tmp = go + ".new"
try:
    os.unlink(tmp)
except FileNotFoundError:
    pass
os.mkfifo(tmp, 0o600)
fd = os.open(tmp, os.O_RDWR)
with open(os.path.join(srv, "pid.new"), "w") as fh:
    fh.write(f"{os.getpid()}\n")
os.rename(os.path.join(srv, "pid.new"), os.path.join(srv, "pid"))
os.rename(tmp, go)
os.write(ready_w, b"1")
os.close(ready_w)

line = b""
while not line.endswith(b"\n") and len(line) < 4096:
    chunk = os.read(fd, 4096 - len(line))
    if not chunk:
        break
    line += chunk
# One request per server: nothing can reach this process after this line.
os.unlink(go)
os.close(fd)
root = line.decode("utf-8", "replace").strip()
# Only a grading directory of the judge's own: <judge dir>/grade-<hex>, no symlink anywhere on the way.
if not re.fullmatch(r"grade-[0-9a-f]{16,64}", os.path.basename(root)) or os.path.dirname(root) != judge_dir or os.path.realpath(root) != root:
    sys.exit(4)
with open(os.path.join(root, "server-request.json"), encoding="utf-8") as fh:
    req = json.load(fh)
env = dict(req["env"])
if req.get("agent_uid"):
    # Without it the worker could not start: leave the run to run.sh's direct line (nothing has run yet).
    if not agent_uid.isdigit() or agent_uid == "0":
        sys.exit(5)
    env["SANDGYM_AGENT_UID"] = agent_uid
# The grading's harness file: the code compiled ahead serves it only if it holds exactly that source.
harness_path = os.path.join(root, "harness", "sandgym_harness.py")
try:
    with open(harness_path, "rb") as fh:
        precompiled = harness_code is not None and fh.read() == HARNESS_SOURCE.encode("utf-8")
except OSError:
    precompiled = False
print(f"request: harness {'precompiled' if precompiled else 'compiled from the grading file'}", file=sys.stderr, flush=True)
started = os.open(os.path.join(root, "out", "started"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
os.close(started)

os.chdir(req["cwd"])
os.environ.clear()
os.environ.update(env)
tempfile.tempdir = None
out = os.open(os.path.join(root, "out", "runner.log"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
sys.stdout.flush()
sys.stderr.flush()
os.dup2(out, 1)
os.dup2(out, 2)
os.close(out)
# The harness worker's start (an interpreter as the agent, ~65-115 ms) overlaps pytest's configuration as well as
# its collection: the grading's own harness module, loaded from the file pytest's `pythonpath` would import it
# from, spawns the worker now, and its pytest_configure hook then finds it started. Only judge code runs in the
# worker until the first test asks it for workspace code. Anything failing here is left to pytest, which imports
# the module again and meets the same error the direct run would.
try:
    import importlib.util

    spec = importlib.util.spec_from_file_location("sandgym_harness", harness_path)
    harness = importlib.util.module_from_spec(spec)
    sys.modules["sandgym_harness"] = harness
    if precompiled:
        exec(with_filename(harness_code, harness_path), harness.__dict__)
    else:
        spec.loader.exec_module(harness)
except BaseException:
    sys.modules.pop("sandgym_harness", None)
else:
    try:
        if harness.workspace._c.config().get("prestart"):
            harness.workspace._c.prestart()
    except Exception:  # the first test starts (and fails) it again, with the real error
        pass
# A backstop only: run.sh's deadline kills this process first (its TERM trap).
signal.signal(signal.SIGALRM, signal.SIG_DFL)
signal.alarm(int(req["limit_s"]) + 10)
sys.argv = [os.path.join(os.path.dirname(pytest.__file__), "__main__.py"), *req["args"]]
try:
    code = int(pytest.main(req["args"]))
except SystemExit as e:  # as the interpreter would exit: None is 0, any other non-integer 1
    code = 0 if e.code is None else e.code if isinstance(e.code, int) else 1
except BaseException:  # what `python -m pytest` would die of: an internal error, never a pass
    import traceback

    traceback.print_exc()
    code = 3
try:
    sys.stdout.flush()
    sys.stderr.flush()
except Exception:
    pass
status = os.path.join(root, "out", "server-status")
with open(status + ".new", "w") as fh:
    fh.write(f"{code}\n")
os.rename(status + ".new", status)
os._exit(0)
