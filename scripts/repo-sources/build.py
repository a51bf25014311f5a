#!/usr/bin/env python3
"""Regenerate envs/repo-sources/: repository tasks cut from real upstream fixes.

Each shipped instance is one bug fix found in the release-to-release diff of a pure-Python package's
source distribution (sdist) on PyPI. The base state is the OLDER release's sdist tree (minus packaging
metadata); `patch` is the source part of that fix and `test_patch` its test part, both copied from the
newer release. Everything the instances need is pinned by sha256, so the data can be rebuilt offline
from a cache of the sdists and re-verified on the local Docker image the repository task kind uses.

Steps (all idempotent; `all` runs them in order):
  fetch    pip-download every pinned sdist into the cache and check its sha256
  archive  build each base archive byte-for-byte (sorted entries, fixed mtimes/owners, gzip mtime 0)
           and check it against the sha256 recorded in the package spec (--update records it)
  verify   for each instance, twice on base+test_patch and twice on base+patch+test_patch, run the
           package's test suite in `sandgym/python:1` (no network, agent-like uid) and derive
           FAIL_TO_PASS / PASS_TO_PASS; flaky or broken tests are excluded and reported
  emit     write envs/repo-sources/<pkg>/instances.jsonl and envs/repo-sources/manifest.json
  cut      authoring aid: print a git-format diff of chosen files (or hunks) between two releases
  renorm   authoring aid: recount a hand-trimmed patch against a base release and print it exactly

Why the older release and not the newer one with the fix reverted: the older tree carries no trace of
the fix (its changelog, version string and PKG-INFO predate it); the newer tree's changelog names it.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SPECS = Path(__file__).resolve().parent / "specs"
OUT = ROOT / "envs" / "repo-sources"
CACHE = Path(
    os.environ.get(
        "SANDGYM_REPO_SOURCES_CACHE", Path.home() / ".cache" / "sandgym-repo-sources"
    )
)
IMAGE = "sandgym/python:1"
# Fixed metadata for archive members: the archive's bytes must not depend on when or by whom it was built.
MTIME = 315532800  # 1980-01-01T00:00:00Z
# Packaging metadata dropped from the base tree: PKG-INFO/egg-info are generated, not upstream source, and
# the issue asks for no packaging copies in the agent's tree. Caches never belong in a base state.
DROP_NAMES = {
    "PKG-INFO",
    "__pycache__",
    ".pytest_cache",
    ".mypy_cache",
    ".tox",
    ".git",
    ".hg",
}
DROP_SUFFIXES = (".egg-info", ".pyc", ".pyo", ".dist-info")
# The importer's caps (coord/repo-format.md): refuse here first so a spec never ships an unimportable tree.
MAX_TOTAL = 50 * 1024 * 1024
MAX_FILES = 20000
MAX_FILE = 1024 * 1024

# A pytest plugin loaded with -p (plugin autoload is off, as when grading): it records each test's
# outcome by exact node id, so results never depend on parsing the terminal report.
REPORTER = r"""
import json, os
_results = {}
def pytest_runtest_logreport(report):
    prev = _results.get(report.nodeid)
    if report.when == "call":
        outcome = "skipped" if report.skipped else ("passed" if report.passed else "failed")
    elif report.failed:
        outcome = "error"
    elif report.skipped:
        outcome = "skipped"
    else:
        outcome = prev or "passed"
    if prev in ("failed", "error") and outcome == "passed":
        return
    _results[report.nodeid] = outcome
def pytest_sessionfinish(session, exitstatus):
    with open(os.environ["SANDGYM_RESULTS"], "w") as f:
        json.dump({"exitstatus": int(exitstatus), "tests": _results}, f, sort_keys=True)
"""


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def load_json(path: Path):
    return json.loads(path.read_text())


def dump_json(path: Path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, sort_keys=False) + "\n")


def packages(only: list[str] | None = None) -> list[dict]:
    out = []
    for spec in sorted(SPECS.glob("*/package.json")):
        pkg = load_json(spec)
        pkg["_dir"] = spec.parent
        if only and pkg["package"] not in only:
            continue
        out.append(pkg)
    return out


def instances(pkg: dict) -> list[dict]:
    out = []
    for spec in sorted(pkg["_dir"].glob("*/instance.json")):
        inst = load_json(spec)
        d = spec.parent
        inst["_dir"] = d
        if (d / "published.json").exists():
            # A published SWE-bench instance, shipped unchanged: its own fields are the truth.
            rec = load_json(d / "published.json")
            inst["published"] = rec
            inst["base_version"] = rec["base_commit"]
            for key in ("patch", "test_patch", "problem_statement", "created_at"):
                inst[key] = rec[key]
        else:
            inst["patch"] = (d / "patch.diff").read_text()
            inst["test_patch"] = (d / "test_patch.diff").read_text()
            inst["problem_statement"] = (d / "problem_statement.md").read_text()
        out.append(inst)
    return out


# ---------------------------------------------------------------- fetch


def sdist_path(pkg: dict, version: str) -> Path:
    rel = pkg["releases"][version]
    return CACHE / rel["filename"]


def go_env() -> dict:
    # The module cache lives beside the sdists; GOFLAGS=-modcacherw keeps it deletable.
    return {
        **os.environ,
        "GOMODCACHE": str(CACHE / "gomod"),
        "GOFLAGS": "-modcacherw",
        "GOTOOLCHAIN": "local",
    }


def gomod_zip(pkg: dict, version: str) -> Path:
    return CACHE / f"{pkg['package']}-{version}.zip"


def fetch_go_toolchain(pkg: dict) -> Path:
    """The Go toolchain is itself a module on the proxy (golang.org/toolchain, what GOTOOLCHAIN
    switching downloads), so the recipe pins it by its go.sum hash like any dependency."""
    tc = pkg["environment"]["toolchain"]
    out = subprocess.run(
        ["go", "mod", "download", "-json", f"{tc['module']}@{tc['version']}"],
        check=True,
        capture_output=True,
        env=go_env(),
    ).stdout
    info = json.loads(out)
    if info["Sum"] != tc["h1"]:
        raise SystemExit(
            f"{tc['module']}@{tc['version']}: go.sum hash {info['Sum']} != pinned {tc['h1']}"
        )
    goroot = Path(info["Dir"])
    # Module zips carry no file modes; the go command marks a downloaded toolchain's binaries
    # executable the same way when it switches toolchains.
    for sub in (
        "bin",
        f"pkg/tool/{'_'.join(tc['version'].rsplit('.', 1)[-1].split('-'))}",
    ):
        for f in (goroot / sub).glob("*"):
            if f.is_file():
                f.chmod(0o755)
    return goroot


def fetch_gomod(pkg: dict) -> None:
    fetch_go_toolchain(pkg)
    for version, rel in pkg["releases"].items():
        dest = gomod_zip(pkg, version)
        if dest.exists() and sha256_file(dest) == rel["sha256"]:
            continue
        CACHE.mkdir(parents=True, exist_ok=True)
        # `go mod download` checks the module against the checksum database (sum.golang.org)
        # and prints its go.sum hash, which the spec pins as well as the zip's sha256.
        out = subprocess.run(
            ["go", "mod", "download", "-json", f"{pkg['module']}@{version}"],
            check=True,
            capture_output=True,
            env=go_env(),
        ).stdout
        info = json.loads(out)
        if info["Sum"] != rel["h1"]:
            raise SystemExit(
                f"{pkg['module']}@{version}: go.sum hash {info['Sum']} != pinned {rel['h1']}"
            )
        shutil.copy(info["Zip"], dest)
        if sha256_file(dest) != rel["sha256"]:
            raise SystemExit(f"{dest}: sha256 differs from the pinned one")
        print(f"fetched {pkg['module']}@{version}")


def extract_gomod(pkg: dict, version: str, into: Path) -> Path:
    path = gomod_zip(pkg, version)
    if not path.exists() or sha256_file(path) != pkg["releases"][version]["sha256"]:
        raise SystemExit(
            f"{path}: missing or not the pinned file; run `build.py fetch` first"
        )
    top = into / top_name(pkg, version)
    prefix = f"{pkg['module_zip_prefix']}@{version}/"
    with zipfile.ZipFile(path) as z:
        for name in z.namelist():
            if (
                not name.startswith(prefix)
                or name.endswith("/")
                or ".." in name.split("/")
            ):
                raise SystemExit(f"{path}: unexpected entry {name}")
            dest = top / name[len(prefix) :]
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(z.read(name))
    return top


def fetch(pkg: dict) -> None:
    if pkg.get("kind") == "gomod":
        fetch_gomod(pkg)
        return
    if pkg.get("kind") == "git":
        for commit in pkg["releases"]:
            subprocess.run(
                [
                    "git",
                    f"--git-dir={mirror_dir(pkg)}",
                    "cat-file",
                    "-e",
                    f"{commit}^{{commit}}",
                ],
                check=True,
            )
        return
    for version, rel in pkg["releases"].items():
        dest = sdist_path(pkg, version)
        if dest.exists() and sha256_file(dest) == rel["sha256"]:
            continue
        CACHE.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory() as tmp:
            # --no-binary :all: makes pip take the sdist; --no-deps: we want this one file only.
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "pip",
                    "download",
                    "-q",
                    "--no-deps",
                    "--no-binary",
                    ":all:",
                    "-d",
                    tmp,
                    f"{pkg['package']}=={version}",
                ],
                check=True,
            )
            got = Path(tmp) / rel["filename"]
            if not got.exists():
                raise SystemExit(
                    f"{pkg['package']} {version}: pip did not produce {rel['filename']}: {os.listdir(tmp)}"
                )
            digest = sha256_file(got)
            if digest != rel["sha256"]:
                raise SystemExit(
                    f"{rel['filename']}: sha256 {digest} != pinned {rel['sha256']}"
                )
            shutil.move(str(got), dest)
        print(f"fetched {rel['filename']}")


# ---------------------------------------------------------------- trees and archives


def mirror_dir(pkg: dict) -> Path:
    # The machine's way to a public repository is a mirror (a bare git directory); anywhere else,
    # point SANDGYM_GIT_MIRRORS at a directory holding <owner>+<name>/repo clones.
    root = Path(os.environ.get("SANDGYM_GIT_MIRRORS", "/work/.mirror"))
    return root / pkg["git"]["repo"].replace("/", "+") / "repo"


def extract_git(pkg: dict, commit: str, into: Path) -> Path:
    top = into / f"{pkg['package']}-{commit[:12]}"
    into.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(
        [
            "git",
            f"--git-dir={mirror_dir(pkg)}",
            "archive",
            "--format=tar",
            f"--prefix={top.name}/",
            commit,
        ],
        check=True,
        capture_output=True,
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tf:
        tf.extractall(into, filter="data")
    return top


def extract_sdist(pkg: dict, version: str, into: Path) -> Path:
    if pkg.get("kind") == "git":
        return extract_git(pkg, version, into)
    if pkg.get("kind") == "gomod":
        return extract_gomod(pkg, version, into)
    path = sdist_path(pkg, version)
    if not path.exists() or sha256_file(path) != pkg["releases"][version]["sha256"]:
        raise SystemExit(
            f"{path}: missing or not the pinned file; run `build.py fetch` first"
        )
    with tarfile.open(path) as tf:
        tf.extractall(into, filter="data")
    tops = [p for p in into.iterdir()]
    if len(tops) != 1 or not tops[0].is_dir():
        raise SystemExit(
            f"{path}: expected one top-level directory, got {[p.name for p in tops]}"
        )
    return tops[0]


def dropped(rel: Path) -> bool:
    return any(part in DROP_NAMES or part.endswith(DROP_SUFFIXES) for part in rel.parts)


def base_tree(pkg: dict, version: str, into: Path) -> Path:
    """The older release's sdist tree without packaging metadata and caches."""
    top = extract_sdist(pkg, version, into)
    for path in sorted(top.rglob("*"), key=lambda p: len(p.parts), reverse=True):
        rel = path.relative_to(top)
        if path.is_symlink():
            raise SystemExit(
                f"{pkg['package']} {version}: symlink {rel} (the importer refuses links)"
            )
        if dropped(rel):
            shutil.rmtree(path) if path.is_dir() else path.unlink()
    for rel in pkg.get("drop_from_base", []):
        target = top / rel
        shutil.rmtree(target) if target.is_dir() else target.unlink()
    return top


def deterministic_targz(tree: Path, top_name: str) -> bytes:
    raw = io.BytesIO()
    total = 0
    count = 0
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tf:

        def add(path: Path, arcname: str) -> None:
            nonlocal total, count
            info = tarfile.TarInfo(arcname)
            info.mtime = MTIME
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            if path.is_dir():
                info.type = tarfile.DIRTYPE
                info.mode = 0o755
                tf.addfile(info)
                return
            data = path.read_bytes()
            if len(data) > MAX_FILE:
                raise SystemExit(f"{arcname}: {len(data)} bytes > 1 MiB cap")
            total += len(data)
            count += 1
            info.size = len(data)
            info.mode = 0o755 if os.access(path, os.X_OK) else 0o644
            tf.addfile(info, io.BytesIO(data))

        add(tree, top_name)
        for path in sorted(
            tree.rglob("*"), key=lambda p: p.relative_to(tree).as_posix()
        ):
            add(path, f"{top_name}/{path.relative_to(tree).as_posix()}")
    if total > MAX_TOTAL or count > MAX_FILES:
        raise SystemExit(
            f"{top_name}: {count} files / {total} bytes exceed the importer's caps"
        )
    out = io.BytesIO()
    # mtime=0 and no file name in the gzip header: the bytes depend on the content only.
    with gzip.GzipFile(
        filename="", mode="wb", fileobj=out, compresslevel=9, mtime=0
    ) as gz:
        gz.write(raw.getvalue())
    return out.getvalue()


def top_name(pkg: dict, version: str) -> str:
    return f"{pkg['package']}-{version[:12] if pkg.get('kind') == 'git' else version}"


def archive_name(pkg: dict, version: str) -> str:
    return f"{top_name(pkg, version)}.base.tar.gz"


def base_versions(pkg: dict) -> list[str]:
    return sorted(
        {inst["base_version"] for inst in instances(pkg)},
        key=lambda v: list(pkg["releases"]).index(v),
    )


def archive(pkg: dict, update: bool) -> None:
    spec_path = pkg["_dir"] / "package.json"
    spec = load_json(spec_path)
    for version in base_versions(pkg):
        with tempfile.TemporaryDirectory() as tmp:
            tree = base_tree(pkg, version, Path(tmp))
            data = deterministic_targz(tree, top_name(pkg, version))
        digest = sha256_bytes(data)
        recorded = spec["releases"][version].get("base_archive_sha256")
        if recorded and recorded != digest and not update:
            raise SystemExit(
                f"{archive_name(pkg, version)}: rebuilt sha256 {digest} != recorded {recorded}"
            )
        dest = OUT / pkg["package"] / archive_name(pkg, version)
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(data)
        spec["releases"][version]["base_archive_sha256"] = digest
        print(f"{dest.relative_to(ROOT)} {len(data)} bytes sha256 {digest}")
    if update:
        dump_json(spec_path, spec)


# ---------------------------------------------------------------- patches


def apply_patch(tree: Path, patch: str, what: str) -> None:
    if not patch:
        return
    # git apply outside any repository: the tree is a plain directory under a temp dir.
    r = subprocess.run(
        ["git", "apply", "--whitespace=nowarn", "-p1", "-"],
        check=False,
        cwd=tree,
        input=patch.encode(),
        capture_output=True,
    )
    if r.returncode != 0:
        raise SystemExit(f"{what} does not apply: {r.stderr.decode()}")


def patch_files(patch: str) -> list[str]:
    return sorted(set(re.findall(r"^diff --git a/(\S+) b/", patch, flags=re.MULTILINE)))


def added_lines(patch: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    current = None
    for line in patch.splitlines():
        m = re.match(r"^\+\+\+ b/(.+)$", line)
        if m:
            current = m.group(1)
            continue
        if line.startswith("+") and not line.startswith("+++") and current:
            out.setdefault(current, []).append(line[1:])
    return out


def check_upstream(pkg: dict, inst: dict, fixed_tree: Path) -> None:
    """Every line the patches add must exist in the fixed release: the fix is upstream's, not ours."""
    for name in ("patch", "test_patch"):
        for path, lines in added_lines(inst[name]).items():
            target = fixed_tree / path
            if not target.exists():
                raise SystemExit(
                    f"{inst['instance_id']}: {name} adds {path}, absent from {inst['fixed_version']}"
                )
            have = set(target.read_text().splitlines())
            missing = [ln for ln in lines if ln not in have]
            if missing:
                raise SystemExit(
                    f"{inst['instance_id']}: {name} lines not in upstream {path}: {missing[:3]}"
                )


def as_list(value) -> list[str]:
    """SWE-bench on the Hugging Face hub publishes test lists as JSON strings; accept both."""
    return json.loads(value) if isinstance(value, str) else list(value)


def is_test_path(path: str, pkg: dict) -> bool:
    parts = path.split("/")
    name = parts[-1]
    return (
        any(p in ("tests", "test", "testing") for p in parts[:-1])
        or name.startswith("test_")
        or name.endswith(("_test.py", "_test.go"))
        or "testdata" in parts[:-1]
        or name in ("conftest.py", "pytest.ini", "tox.ini")
        or path in pkg.get("test_support_files", [])
    )


# ---------------------------------------------------------------- verification in Docker


def requirements_site(pkg: dict, work: Path) -> Path | None:
    reqs = pkg["environment"].get("requirements", [])
    if not reqs:
        return None
    site = CACHE / "site" / sha256_bytes("\n".join(reqs).encode())[:16]
    if site.exists():
        return site
    req_file = work / "requirements.txt"
    req_file.write_text("\n".join(reqs) + "\n")
    wheels = work / "wheels"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "-q",
            "--no-deps",
            "--only-binary",
            ":all:",
            "--require-hashes",
            "-r",
            str(req_file),
            "-d",
            str(wheels),
        ],
        check=True,
    )
    tmp_site = work / "site"
    for whl in sorted(wheels.glob("*.whl")):
        with zipfile.ZipFile(whl) as z:
            z.extractall(tmp_site)
    site.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(tmp_site, site)
    return site


def run_go_suite(pkg: dict, tree: Path, out_dir: Path) -> tuple[dict, float]:
    """`go test -json` in the same image, with the Go toolchain mounted read-only, no network and no
    module proxy: the modules shipped here have no dependencies, so nothing may be downloaded."""
    env = pkg["environment"]
    out_dir.mkdir(parents=True, exist_ok=True)
    subprocess.run(["chmod", "-R", "a+rwX", str(tree), str(out_dir)], check=True)
    goroot = fetch_go_toolchain(pkg)
    cmd = [
        "docker",
        "run",
        "--rm",
        "--network",
        "none",
        "--memory",
        "1g",
        "--cpus",
        "1",
    ]
    cmd += [
        "--user",
        "65534:65534",
        "-w",
        "/workspace/repo",
        "-v",
        f"{tree}:/workspace/repo",
    ]
    # The Go build cache is content-addressed, so sharing it between runs cannot change a verdict;
    # without it every run recompiles the standard library (minutes on a loaded 2-core machine).
    gocache = CACHE / "gocache"
    gocache.mkdir(parents=True, exist_ok=True)
    subprocess.run(["chmod", "a+rwX", str(gocache)], check=True)
    cmd += [
        "-v",
        f"{out_dir}:/sandgym-out",
        "-v",
        f"{goroot}:/usr/local/go:ro",
        "-v",
        f"{gocache}:/gocache",
    ]
    for key, value in {
        "PATH": "/usr/local/go/bin:/usr/bin:/bin",
        "HOME": "/tmp",
        "GOCACHE": "/gocache",
        "GOPATH": "/tmp/gopath",
        "GOPROXY": "off",
        "GOFLAGS": "-mod=mod",
        "GOTOOLCHAIN": "local",
        "GOTELEMETRY": "off",
        "CGO_ENABLED": "0",
    }.items():
        cmd += ["-e", f"{key}={value}"]
    cmd += [
        IMAGE,
        "sh",
        "-c",
        'go test -json -count=1 "$@" > /sandgym-out/test.json',
        "go-test",
    ]
    cmd += env.get("go_test_args", []) + pkg["test_paths"]
    t0 = time.monotonic()
    r = subprocess.run(
        cmd, check=False, capture_output=True, timeout=pkg.get("timeout_s", 300)
    )
    elapsed = time.monotonic() - t0
    (out_dir / "log.txt").write_bytes(r.stdout + r.stderr)
    tests: dict[str, str] = {}
    build_failed = []
    for line in (out_dir / "test.json").read_text().splitlines():
        if not line.startswith("{"):
            continue
        ev = json.loads(line)
        action = ev.get("Action")
        if action not in ("pass", "fail", "skip"):
            continue
        if "Test" in ev:
            tests[f"{ev['Package']}::{ev['Test']}"] = {
                "pass": "passed",
                "fail": "failed",
                "skip": "skipped",
            }[action]
        elif action == "fail" and not any(
            k.startswith(ev["Package"] + "::") for k in tests
        ):
            build_failed.append(ev["Package"])
    return {
        "exitstatus": r.returncode,
        "tests": tests,
        "build_failed": build_failed,
    }, elapsed


def run_suite(
    pkg: dict, tree: Path, site: Path | None, out_dir: Path, test_paths: list[str]
) -> tuple[dict, float]:
    if pkg.get("language") == "go":
        return run_go_suite(pkg, tree, out_dir)
    env = pkg["environment"]
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "sandgym_verify_report.py").write_text(REPORTER)
    results = out_dir / "results.json"
    if results.exists():
        results.unlink()
    subprocess.run(["chmod", "-R", "a+rwX", str(tree), str(out_dir)], check=True)
    pythonpath = [
        f"/workspace/repo/{p}".rstrip("/.") if p != "." else "/workspace/repo"
        for p in env["python_path"]
    ]
    if site:
        pythonpath.append("/opt/sandgym/site")
    pythonpath.append("/sandgym-out")
    cmd = [
        "docker",
        "run",
        "--rm",
        "--network",
        "none",
        "--memory",
        "1g",
        "--cpus",
        "1",
        "--user",
        "65534:65534",
        "-w",
        "/workspace/repo",
        "-e",
        "PYTHONPATH=" + ":".join(pythonpath),
        "-e",
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD=1",
        "-e",
        "PYTHONDONTWRITEBYTECODE=1",
        "-e",
        "HOME=/tmp",
        "-e",
        "SANDGYM_RESULTS=/sandgym-out/results.json",
        "-v",
        f"{tree}:/workspace/repo",
        "-v",
        f"{out_dir}:/sandgym-out",
    ]
    if site:
        cmd += ["-v", f"{site}:/opt/sandgym/site:ro"]
    cmd += [
        IMAGE,
        "python3",
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "-p",
        "sandgym_verify_report",
        "--rootdir=/workspace/repo",
        "-q",
        "--color=no",
    ]
    for plugin in env.get("pytest_plugins", []):
        cmd += ["-p", plugin]
    cmd += env.get("pytest_args", []) + test_paths
    t0 = time.monotonic()
    r = subprocess.run(
        cmd, check=False, capture_output=True, timeout=pkg.get("timeout_s", 300)
    )
    elapsed = time.monotonic() - t0
    (out_dir / "log.txt").write_bytes(r.stdout + r.stderr)
    if not results.exists():
        raise SystemExit(
            f"pytest wrote no results (exit {r.returncode}); see {out_dir / 'log.txt'}"
        )
    return load_json(results), elapsed


def verify(pkg: dict, runs: int, only: list[str] | None) -> None:
    report_path = OUT / pkg["package"] / "verification.json"
    report = load_json(report_path) if report_path.exists() else {"instances": {}}
    with tempfile.TemporaryDirectory(prefix="repo-sources-") as tmp:
        tmp = Path(tmp)
        site = requirements_site(pkg, tmp)
        for inst in instances(pkg):
            iid = inst["instance_id"]
            if only and iid not in only:
                continue
            for path in patch_files(inst["patch"]):
                if is_test_path(path, pkg):
                    raise SystemExit(f"{iid}: patch touches test file {path}")
            for path in patch_files(inst["test_patch"]):
                if not is_test_path(path, pkg):
                    raise SystemExit(f"{iid}: test_patch touches non-test file {path}")
            if "published" not in inst:
                fixed = extract_sdist(pkg, inst["fixed_version"], tmp / f"{iid}-fixed")
                check_upstream(pkg, inst, fixed)
            outcomes = {"base": [], "fixed": []}
            timings = {"base": [], "fixed": []}
            for state in ("base", "fixed"):
                for n in range(runs):
                    # A fresh tree per run, extracted from the shipped archive: what an importer gets.
                    tree = tmp / f"{iid}-{state}-{n}"
                    tree.mkdir()
                    with tarfile.open(
                        OUT / pkg["package"] / archive_name(pkg, inst["base_version"])
                    ) as tf:
                        tf.extractall(tree, filter="data")
                    tree = tree / top_name(pkg, inst["base_version"])
                    apply_patch(tree, inst["test_patch"], f"{iid} test_patch")
                    if state == "fixed":
                        apply_patch(tree, inst["patch"], f"{iid} patch")
                    res, elapsed = run_suite(
                        pkg,
                        tree,
                        site,
                        tmp / f"out-{iid}-{state}-{n}",
                        # an old release may keep its tests elsewhere (parse 1.17: test_parse.py)
                        inst.get("test_paths", pkg["test_paths"]),
                    )
                    if res.get("build_failed"):
                        raise SystemExit(
                            f"{iid} {state}: packages failed to build: {res['build_failed']}"
                        )
                    outcomes[state].append(res["tests"])
                    timings[state].append(round(elapsed, 2))
                    print(
                        f"{iid} {state} run {n + 1}: {len(res['tests'])} tests, exit {res['exitstatus']}, {elapsed:.1f}s"
                    )
            names = set().union(*outcomes["base"], *outcomes["fixed"])
            flaky, broken, f2p, p2p, regress = [], [], [], [], []
            # Tests whose verdict depends on the runner's process environment rather than on the
            # code under test (spec: exclude_tests, each with its reason) never become F2P/P2P.
            excluded_env = {
                n: r for n, r in pkg.get("exclude_tests", {}).items() if n in names
            }
            for name in sorted(names - set(excluded_env)):
                b = {o.get(name, "missing") for o in outcomes["base"]}
                f = {o.get(name, "missing") for o in outcomes["fixed"]}
                if len(b) > 1 or len(f) > 1:
                    flaky.append(name)
                    continue
                (b,), (f,) = b, f
                if f != "passed":
                    if f not in ("skipped",):
                        broken.append({"test": name, "base": b, "fixed": f})
                    continue
                if b == "passed":
                    p2p.append(name)
                elif b in ("failed", "error", "missing"):
                    f2p.append(name)
                else:
                    regress.append({"test": name, "base": b, "fixed": f})
            if "published" in inst:
                # Shipped unchanged: every published FAIL_TO_PASS must fail then pass, every
                # published PASS_TO_PASS must pass on both, here, on this image.
                pub_f2p = as_list(inst["published"]["FAIL_TO_PASS"])
                pub_p2p = as_list(inst["published"]["PASS_TO_PASS"])
                truncated = {}
                bad = []
                for pub, got in ((pub_f2p, f2p), (pub_p2p, p2p)):
                    for test in pub:
                        if test in got:
                            continue
                        # SWE-bench's log parser cuts a node id at its first space, so a
                        # parametrized id such as "test_x[a b]" is published as "test_x[a".
                        # Such an id stands for every node id it is the space-cut prefix of;
                        # all of them must behave.
                        full = sorted(n for n in names if n.startswith(test + " "))
                        if full and all(n in got for n in full):
                            truncated[test] = full
                        else:
                            bad.append(test)
                if bad:
                    raise SystemExit(
                        f"{iid}: published tests that do not behave here: {bad[:5]}"
                    )
                f2p, p2p = pub_f2p, pub_p2p
            expected = set(inst.get("expect_fail_to_pass", []))
            if expected - set(f2p):
                raise SystemExit(
                    f"{iid}: expected FAIL_TO_PASS not observed: {sorted(expected - set(f2p))}"
                )
            if not f2p:
                raise SystemExit(
                    f"{iid}: no test fails on base and passes with the fix"
                )
            report["instances"][iid] = {
                "image": IMAGE,
                "runs_per_state": runs,
                "FAIL_TO_PASS": f2p,
                "PASS_TO_PASS": p2p,
                "excluded_flaky": flaky,
                "excluded_not_passing_with_fix": broken,
                "excluded_other": regress,
                "excluded_by_spec": excluded_env,
                **(
                    {"published_ids_cut_at_space": truncated}
                    if "published" in inst and truncated
                    else {}
                ),
                "seconds": timings,
                "verified_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            }
            print(
                f"{iid}: F2P {len(f2p)} P2P {len(p2p)} flaky {len(flaky)} broken {len(broken)}"
            )
    report["instances"] = dict(sorted(report["instances"].items()))
    dump_json(report_path, report)


# ---------------------------------------------------------------- emit


def published_sandgym(pkg: dict, inst: dict, v: dict, rel: dict) -> dict:
    pub = pkg["published"]
    return {
        "language": "python",
        "split": pkg["split"],
        "difficulty": inst.get("difficulty", "medium"),
        "provenance": {
            "source": "swe-bench",
            "package": pkg["package"],
            "version": inst["base_version"],
            "url": f"https://github.com/{pkg['git']['repo']}/tree/{inst['base_version']}",
            "sha256": rel["base_archive_sha256"],
            "licence": pkg["licence"],
            "upstream_fix": f"published instance {inst['instance_id']} of {pub['dataset']} ({pub['split']} split), "
            f"all SWE-bench fields unchanged; copy read from {pub['copy']} (sha256 {pub['copy_sha256']})",
            "base_state": f"git archive {inst['base_version']} of {pkg['git']['repo']} (no .git)",
            "validated": f"{v['runs_per_state']} runs each of base+test_patch and base+patch+test_patch on "
            f"{v['image']} (no network, uid 65534, plugin autoload off), {v['verified_at']}: every "
            "published FAIL_TO_PASS failed then passed, every PASS_TO_PASS passed; "
            "scripts/repo-sources/build.py verify",
            "notes": inst.get("notes", ""),
        },
        "source": {
            "archive": archive_name(pkg, inst["base_version"]),
            "sha256": rel["base_archive_sha256"],
            "strip_components": 1,
        },
        "environment": pkg["environment"],
        "timeout_s": pkg.get("timeout_s", 120),
    }


def emit(pkg: dict) -> dict:
    report = load_json(OUT / pkg["package"] / "verification.json")["instances"]
    lines = []
    summary = []
    for inst in instances(pkg):
        iid = inst["instance_id"]
        if iid not in report:
            raise SystemExit(f"{iid}: not verified; run `build.py verify` first")
        v = report[iid]
        base = inst["base_version"]
        rel = pkg["releases"][base]
        if "published" in inst:
            record = dict(inst["published"])
            record["sandgym"] = published_sandgym(pkg, inst, v, rel)
            lines.append(json.dumps(record, ensure_ascii=False))
            summary.append(
                {
                    "instance_id": iid,
                    "base_commit": base,
                    "published": pkg["published"]["dataset"],
                    "fail_to_pass": len(v["FAIL_TO_PASS"]),
                    "pass_to_pass": len(v["PASS_TO_PASS"]),
                    "excluded_flaky": len(v["excluded_flaky"]),
                    "seconds": v["seconds"],
                }
            )
            continue
        fixed_rel = pkg["releases"][inst["fixed_version"]]
        record = {
            "instance_id": iid,
            "repo": f"pypi/{pkg['package']}",
            "base_commit": f"sdist:{pkg['package']}-{base}",
            "patch": inst["patch"],
            "test_patch": inst["test_patch"],
            "problem_statement": inst["problem_statement"],
            "hints_text": "",
            "FAIL_TO_PASS": v["FAIL_TO_PASS"],
            "PASS_TO_PASS": v["PASS_TO_PASS"],
            "version": base,
            "environment_setup_commit": f"sdist:{pkg['package']}-{base}",
            "created_at": inst["created_at"],
            "sandgym": {
                "language": pkg.get("language", "python"),
                "split": pkg["split"],
                "difficulty": inst.get("difficulty", "medium"),
                "provenance": {
                    "source": "go-module-proxy"
                    if pkg.get("kind") == "gomod"
                    else "pypi-sdist",
                    "package": pkg["package"],
                    "version": base,
                    "fixed_version": inst["fixed_version"],
                    "url": rel["url"],
                    "sha256": rel["sha256"],
                    "fixed_url": fixed_rel["url"],
                    "fixed_sha256": fixed_rel["sha256"],
                    "licence": pkg["licence"],
                    "upstream_fix": inst["upstream_fix"],
                    "base_state": (
                        "older release's module zip from the Go module proxy (go.sum hash checked), "
                        "unpacked; patch and test_patch are hunks of the release-to-release diff"
                        if pkg.get("kind") == "gomod"
                        else "older release's sdist tree without PKG-INFO/*.egg-info; patch and "
                        "test_patch are hunks of the release-to-release diff"
                    ),
                    "validated": f"{v['runs_per_state']} runs each of base+test_patch and "
                    f"base+patch+test_patch on {v['image']} (no network, uid 65534, "
                    + (
                        "go test -json, GOPROXY=off"
                        if pkg.get("kind") == "gomod"
                        else "plugin autoload off"
                    )
                    + f"), {v['verified_at']}; scripts/repo-sources/build.py verify",
                    "notes": inst.get("notes", ""),
                },
                "source": {
                    "archive": archive_name(pkg, base),
                    "sha256": rel["base_archive_sha256"],
                    "strip_components": 1,
                },
                "environment": pkg["environment"],
                "timeout_s": pkg.get("timeout_s", 120),
            },
        }
        lines.append(json.dumps(record, sort_keys=False, ensure_ascii=False))
        summary.append(
            {
                "instance_id": iid,
                "base_version": base,
                "fixed_version": inst["fixed_version"],
                "fail_to_pass": len(v["FAIL_TO_PASS"]),
                "pass_to_pass": len(v["PASS_TO_PASS"]),
                "excluded_flaky": len(v["excluded_flaky"]),
                "seconds": v["seconds"],
            }
        )
    out = OUT / pkg["package"] / "instances.jsonl"
    out.write_text("\n".join(lines) + "\n")
    req = OUT / pkg["package"] / "requirements.txt"
    reqs = pkg["environment"].get("requirements", [])
    req.write_text(
        "# pip hash-checking mode; wheels only; empty = pytest from the base image only\n"
        + "".join(r + "\n" for r in reqs)
    )
    archives = []
    for version in base_versions(pkg):
        path = OUT / pkg["package"] / archive_name(pkg, version)
        entry = {
            "file": f"{pkg['package']}/{path.name}",
            "bytes": path.stat().st_size,
            "sha256": sha256_file(path),
        }
        if pkg.get("kind") == "git":
            entry.update({"from_git": pkg["git"]["repo"], "commit": version})
        else:
            entry.update(
                {
                    "from_sdist": pkg["releases"][version]["url"],
                    "sdist_sha256": pkg["releases"][version]["sha256"],
                }
            )
        archives.append(entry)
    return {
        "package": pkg["package"],
        "licence": pkg["licence"],
        "split": pkg["split"],
        "homepage": pkg.get("homepage", ""),
        "instances_file": f"{pkg['package']}/instances.jsonl",
        "archives": archives,
        "instances": summary,
    }


# ---------------------------------------------------------------- cut (authoring aid)


def file_diff(a: Path, b: Path, rel: str) -> str:
    pa, pb = a / rel, b / rel
    la = f"a/{rel}" if pa.exists() else "/dev/null"
    lb = f"b/{rel}" if pb.exists() else "/dev/null"
    r = subprocess.run(
        [
            "diff",
            "-u",
            "--label",
            la,
            "--label",
            lb,
            str(pa) if pa.exists() else "/dev/null",
            str(pb) if pb.exists() else "/dev/null",
        ],
        check=False,
        capture_output=True,
        text=True,
    )
    if r.returncode == 0:
        return ""
    mode = (
        ""
        if pa.exists() and pb.exists()
        else ("new file mode 100644\n" if pb.exists() else "deleted file mode 100644\n")
    )
    return f"diff --git a/{rel} b/{rel}\n{mode}{r.stdout}"


def cut(pkg: dict, old: str, new: str, files: list[str]) -> None:
    """Print the diff OLD..NEW of FILE, or of only some hunks of it with FILE:0,2 (hunk indexes as in the
    full diff). A partial selection is applied to the old file and re-diffed, so its headers are exact."""
    with tempfile.TemporaryDirectory() as tmp:
        a = extract_sdist(pkg, old, Path(tmp) / "a")
        b = extract_sdist(pkg, new, Path(tmp) / "b")
        for spec in files:
            rel, _, picks = spec.partition(":")
            full = file_diff(a, b, rel)
            if not picks or not full:
                sys.stdout.write(full)
                continue
            head, *hunks = re.split(r"(?m)^(?=@@ )", full)
            chosen = head + "".join(hunks[int(i)] for i in picks.split(","))
            mid = Path(tmp) / "mid"
            shutil.rmtree(mid, ignore_errors=True)
            (mid / rel).parent.mkdir(parents=True)
            shutil.copy(a / rel, mid / rel)
            r = subprocess.run(
                ["git", "apply", "--recount", "-p1", "-"],
                check=False,
                cwd=mid,
                input=chosen.encode(),
                capture_output=True,
            )
            if r.returncode != 0:
                raise SystemExit(
                    f"{spec}: selected hunks do not apply alone: {r.stderr.decode()}"
                )
            sys.stdout.write(file_diff(a, mid, rel))


def renorm(pkg: dict, base: str, patch_file: str) -> None:
    """Authoring aid for hand-trimmed hunks: apply PATCH_FILE to BASE with recounted hunk headers and
    print the exact diff it makes (so a trimmed hunk's line counts never have to be fixed by hand)."""
    patch = Path(patch_file).read_text()
    with tempfile.TemporaryDirectory() as tmp:
        a = extract_sdist(pkg, base, Path(tmp) / "a")
        b = Path(tmp) / "b"
        shutil.copytree(a, b)
        r = subprocess.run(
            ["git", "apply", "--recount", "-p1", "-"],
            check=False,
            cwd=b,
            input=patch.encode(),
            capture_output=True,
        )
        if r.returncode != 0:
            raise SystemExit(
                f"{patch_file} does not apply to {base}: {r.stderr.decode()}"
            )
        for rel in patch_files(patch):
            sys.stdout.write(file_diff(a, b, rel))


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "step", choices=["fetch", "archive", "verify", "emit", "all", "cut", "renorm"]
    )
    ap.add_argument("--package", action="append", help="limit to these packages")
    ap.add_argument(
        "--instance", action="append", help="verify: limit to these instance ids"
    )
    ap.add_argument(
        "--runs", type=int, default=2, help="verify: runs per state (flakiness check)"
    )
    ap.add_argument(
        "--update",
        action="store_true",
        help="archive: record new archive sha256s in the specs",
    )
    ap.add_argument(
        "rest", nargs="*", help="cut: OLD NEW FILE[:HUNKS]...; renorm: BASE PATCH_FILE"
    )
    args = ap.parse_intermixed_args()
    pkgs = packages(args.package)
    if args.step == "renorm":
        renorm(pkgs[0], args.rest[0], args.rest[1])
        return
    if args.step == "cut":
        cut(pkgs[0], args.rest[0], args.rest[1], args.rest[2:])
        return
    if args.step in ("fetch", "all"):
        for p in pkgs:
            fetch(p)
    if args.step in ("archive", "all"):
        for p in pkgs:
            archive(p, args.update)
        pkgs = packages(args.package)  # re-read recorded sha256s
    if args.step in ("verify", "all"):
        for p in pkgs:
            verify(p, args.runs, args.instance)
    if args.step in ("emit", "all"):
        manifest_path = OUT / "manifest.json"
        manifest = (
            load_json(manifest_path) if manifest_path.exists() else {"packages": {}}
        )
        for p in pkgs:
            manifest["packages"][p["package"]] = emit(p)
        manifest["packages"] = dict(sorted(manifest["packages"].items()))
        manifest["generated_by"] = "scripts/repo-sources/build.py"
        manifest["format"] = (
            "SWE-bench instances + `sandgym` object (coord repo-format v1)"
        )
        manifest["totals"] = {
            "packages": len(manifest["packages"]),
            "instances": sum(
                len(p["instances"]) for p in manifest["packages"].values()
            ),
            "archive_bytes": sum(
                a["bytes"] for p in manifest["packages"].values() for a in p["archives"]
            ),
        }
        dump_json(manifest_path, manifest)


if __name__ == "__main__":
    main()
