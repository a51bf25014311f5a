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
# Then the repository's import roots, first (its package is not installed), before the wheels and the system's.
sys.path[:0] = [os.path.normpath(os.path.join(_root, p)) for p in _cfg["python_path"]]
os.chdir(_root)

_results = {}
_collect_errors = []


class _SandgymRecorder:
    """Per-test outcome from every phase: an error in setup or teardown is an error, a skip is not a pass."""

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
        json.dumps({"token": _token, "status": _status, "tests": _results, "collect_errors": _collect_errors[:200]})
    )
    _out.flush()
os._exit(0)
