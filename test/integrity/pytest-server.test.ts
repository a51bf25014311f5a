// Issue 19 item 3: the judge's pytest pre-started in pooled grading sandboxes (grader-plan.ts pytestServerPrepare,
// pytest_server.py; the pool's SandboxRequirement.prepare). Real Docker sandboxes, the grading path of code-v0
// (gradeSubmission). What must hold:
//  - verdicts are the direct run's: the reference, every known-wrong solution and hostile submissions score the
//    same with the server as without it, and the server did run them (GradeResult.prestarted);
//  - a server that is gone when the grading starts costs nothing but speed: the run starts pytest itself;
//  - the run's deadline kills the server (it is not the run's child): "tests timed out", nothing left running;
//  - the agent (the harness worker, during the run) cannot reach the server's request pipe, its status file or
//    its process, and a forged verdict through any of them scores what the submission earned;
//  - on a pool that wipes grading sandboxes in place (the mutation gate's), every grading gets a fresh server;
//  - the server's head start (a warm-up pytest run, the harness compiled ahead) changes no verdict: the warm-up
//    leaves no module, path or file a grading's tests could meet, and code compiled ahead serves a grading only
//    when the grading's own harness file holds exactly its source (and names that file in tracebacks);
//  - the syntax diagnostic, which runs as the agent beside the tests, names nothing of the judge (no nonce in its
//    cwd, fds, argv or environment), its output cannot be written by the agent's code, and an agent that stops it
//    delays its own grading by at most the check's deadline and earns what it earned.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applySolution, seedWorkspace } from '../../envs/src/code/agents.js';
import { gradeSubmission, type GradeOptions, type GradeResult } from '../../envs/src/code/grade.js';
import { PYTEST_SERVER_PY, pytestServerDir, pytestServerPrepare } from '../../envs/src/code/grader-plan.js';
import { SHIPPED_TASKS_DIR } from '../../envs/src/code/server-env.js';
import { loadTaskSets } from '../../envs/src/code/task-loader.js';
import type { LoadedTask } from '../../envs/src/code/task-types.js';
import { taskRequirement } from '../../envs/src/code/validate.js';
import type { Sandbox, SandboxProvider, SandboxProviderHandle, SandboxRequirement } from '../../envs/src/sandbox-api.js';
import { openSandboxProvider } from '../../server/src/env-host/sandbox-adapter.js';
import { dockerFacility, gate } from '../../server/test/sandbox/facilities.js';

const HAS_DOCKER = gate('docker', await dockerFacility('sandgym/python:1'));
const tasks = await loadTaskSets([SHIPPED_TASKS_DIR]);
const byId = (id: string) => tasks.find((t) => t.spec.id === id) as LoadedTask;
const slugify = byId('py-slugify');
const SRV = pytestServerDir();

/** Judge-side look at a grading sandbox: how many pre-started servers run in it (their argv names SRV). */
const SERVERS_SCRIPT = `n=0; for f in /proc/[0-9]*/cmdline; do c=$(tr '\\0' ' ' <"$f" 2>/dev/null) || continue; case "$c" in "python3 -I -B - ${SRV} ") n=$((n+1));; esac; done; echo $n`;

/** Wraps the provider: optional work on each grading sandbox before it is graded, a look at it before release. */
class Probe implements SandboxProvider {
  before: ((sb: Sandbox) => Promise<void>) | null = null;
  seen: number[] = [];
  /** The server's log (SRV/server.log) of each grading sandbox, read before its release. */
  logs: string[] = [];
  constructor(private readonly inner: SandboxProvider) {}
  async acquire(req: SandboxRequirement): Promise<Sandbox> {
    const sb = await this.inner.acquire(req);
    if (req.prepare && this.before) await this.before(sb);
    return sb;
  }
  async release(sb: Sandbox): Promise<void> {
    const r = await sb.exec({ script: SERVERS_SCRIPT, identity: 'judge', timeout_ms: 30_000 });
    this.seen.push(Number(r.stdout.trim()));
    this.logs.push((await sb.exec({ argv: ['cat', `${SRV}/server.log`], identity: 'judge', timeout_ms: 30_000 })).stdout);
    return this.inner.release(sb);
  }
}

describe.skipIf(!HAS_DOCKER)('pre-started pytest in grading sandboxes (docker)', () => {
  let handle: SandboxProviderHandle;
  let probe: Probe;
  beforeAll(async () => {
    handle = await openSandboxProvider('docker', { maxTotal: 3, minIdle: 1 });
    probe = new Probe(handle.provider);
  });
  afterAll(async () => {
    await handle?.close();
  });

  /** The submission: the task's workspace with `files` laid over it (or a solution applied), as a tar. */
  async function submission(task: LoadedTask, files: Record<string, string> | null, sol?: LoadedTask['solution']): Promise<Uint8Array> {
    const sb = await handle.provider.acquire(taskRequirement(task));
    try {
      await seedWorkspace(sb, task);
      if (sol) await applySolution(sb, sol);
      if (files) await sb.putFiles(Object.entries(files).map(([path, content]) => ({ path, content, mode: 0o644 })));
      return await sb.getTar('/workspace');
    } finally {
      await handle.provider.release(sb);
    }
  }

  const grade = (task: LoadedTask, tar: Uint8Array, extra: Partial<GradeOptions> = {}): Promise<GradeResult> =>
    gradeSubmission(task, tar, { provider: probe, requirement: taskRequirement(task), killStragglers: true, ...extra });

  /** Both paths on one submission: the same verdict, and each ran where it says. */
  async function both(task: LoadedTask, tar: Uint8Array): Promise<GradeResult> {
    const viaServer = await grade(task, tar);
    const direct = await grade(task, tar, { prestartServer: false });
    expect(viaServer.prestarted, `${task.spec.id}: the server ran it; log: ${viaServer.log_tail}`).toBe(true);
    expect(direct.prestarted).toBe(false);
    expect(viaServer.score).toEqual(direct.score);
    expect(viaServer.tests).toEqual(direct.tests);
    expect(viaServer.failures).toEqual(direct.failures);
    return viaServer;
  }

  it('the reference and every known-wrong solution score exactly what the direct run gives them', async () => {
    // The probe sees a waiting server in a grading sandbox fresh from the pool (so its 0s below mean something).
    const fresh = await handle.provider.acquire({ ...taskRequirement(slugify), prepare: pytestServerPrepare() });
    expect((await fresh.exec({ script: SERVERS_SCRIPT, identity: 'judge' })).stdout.trim()).toBe('1');
    await handle.provider.release(fresh);
    for (const task of [slugify, byId('py-fix-date-ranges')]) {
      const ref = await both(task, await submission(task, null, task.solution));
      expect(ref.score.total).toBe(1);
      expect(task.wrong.length).toBeGreaterThan(0);
      for (const w of task.wrong) {
        const g = await both(task, await submission(task, null, w.solution));
        expect(g.score.total, `${task.spec.id} wrong/${w.name}`).toBeLessThan(1);
      }
    }
    // The server ran the tests and ended with them: nothing of it is left when the sandbox goes back.
    expect(probe.seen.every((n) => n === 0)).toBe(true);
  }, 300_000);

  it('the warm-up leaves nothing a grading meets: a test module of the same name grades as in a direct run', async () => {
    // A fresh grading sandbox: the server warmed up (its pytest ran a throw-away test file, one test failing, as
    // it must) and left no file of that run behind.
    const fresh = await handle.provider.acquire({ ...taskRequirement(slugify), prepare: pytestServerPrepare() });
    const look = await fresh.exec({ script: `cat ${SRV}/server.log; ls -A ${SRV}`, identity: 'judge', timeout_ms: 30_000 });
    await handle.provider.release(fresh);
    expect(look.stdout).toMatch(/^warm-up: pytest exited 1 in \d+ ms$/m);
    expect(look.stdout.trim().split('\n').slice(1).sort()).toEqual(['go', 'lock', 'pid', 'server.log']);
    // The warm-up's test module is test_sandgym_warm_up (prepend import mode): a task whose test file has that
    // name would meet "import file mismatch" (a collection error: 0 for a correct solution) if the warm-up's
    // module, or its directory on sys.path, were still there.
    const same = { ...slugify, tests: slugify.tests.map((f) => ({ ...f, path: 'test_sandgym_warm_up.py' })) } as LoadedTask;
    probe.logs = [];
    const g = await both(same, await submission(same, null, same.solution));
    expect(g.score.total, g.log_tail).toBe(1);
    expect(g.tests?.passed).toBe(slugify.spec.test.expected_tests);
    expect(probe.logs[0]).toMatch(/^request: harness precompiled$/m);
  }, 180_000);

  it('the harness compiled ahead serves only a grading whose harness file holds its source, and names that file', async () => {
    // A submission whose function raises: the tests' tracebacks pass through the harness's frames, which must
    // name the grading's harness file (as a fresh import would), not the name the code was compiled under.
    const raising = await submission(slugify, { 'slug.py': 'def slugify(text):\n    raise ValueError("no")\n' });
    probe.logs = [];
    const g = await both(slugify, raising);
    expect(g.score.total).toBe(0);
    expect(probe.logs[0]).toMatch(/^request: harness precompiled$/m);
    expect(g.log_tail).toMatch(/File "\/run\/sandgym\/judge\/grade-[0-9a-f]+\/harness\/sandgym_harness\.py", line \d+/);
    // A server prepared with other harness source (code that would end every run at import) is handed the
    // grading: it compiles the grading's own file, and the verdict is the direct run's.
    const tar = await submission(slugify, null, slugify.solution);
    probe.before = async (sb) => {
      const kill = await sb.exec({
        script: `read -r p <${SRV}/pid && kill -9 "$p" && while kill -0 "$p" 2>/dev/null; do sleep 0.05; done`,
        identity: 'judge',
        timeout_ms: 30_000,
      });
      expect(kill.exit_code).toBe(0);
      const other = `HARNESS_SOURCE = ${JSON.stringify('raise SystemExit("the code compiled ahead ran")\n')}\n${PYTEST_SERVER_PY}`;
      const prep = await sb.exec({ ...pytestServerPrepare(), stdin: other });
      expect(prep.exit_code, prep.stderr).toBe(0);
    };
    probe.logs = [];
    try {
      const other = await grade(slugify, tar);
      expect(other.prestarted).toBe(true);
      expect(other.score.total, other.log_tail).toBe(1);
      expect(probe.logs[0]).toMatch(/^request: harness compiled from the grading file$/m);
    } finally {
      probe.before = null;
    }
  }, 180_000);

  it('a server gone before the grading starts: the run starts pytest itself, same verdict', async () => {
    const tar = await submission(slugify, null, slugify.solution);
    probe.before = async (sb) => {
      const r = await sb.exec({
        script: `read -r p <${SRV}/pid && kill -9 "$p" && while kill -0 "$p" 2>/dev/null; do sleep 0.05; done; ls ${SRV}`,
        identity: 'judge',
        timeout_ms: 30_000,
      });
      // The stale request pipe is still there: the run must notice that no server took the request.
      expect(r.stdout).toContain('go');
    };
    try {
      const g = await grade(slugify, tar);
      expect(g.prestarted).toBe(false);
      expect(g.score.total).toBe(1);
      expect(g.tests?.passed).toBe(slugify.spec.test.expected_tests);
    } finally {
      probe.before = null;
    }
  }, 120_000);

  it("the run's deadline kills the server: tests timed out, nothing of it left running", async () => {
    // Each call sleeps 1 s: 18 tests outlast a 3 s test limit (a 23 s budget leaves 3 s after the 20 s overhead).
    const tar = await submission(slugify, { 'slug.py': 'import time\ndef slugify(text):\n    time.sleep(1)\n    return ""\n' });
    probe.seen = [];
    const g = await grade(slugify, tar, { budgetMs: 23_000 });
    expect(g.prestarted).toBe(true);
    expect(g.score.total).toBe(0);
    expect(g.score.zero_reason).toBe('tests timed out after 3s');
    expect(probe.seen).toEqual([0]);
  }, 120_000);

  const REF_SLUG = Buffer.from(slugify.solution.files.find((f) => f.path === 'slug.py')!.content).toString('utf8');
  /**
   * slug.py for an attack run in the harness worker (agent uid) during the tests: the reference renamed, `attempt`
   * and `write` helpers, the attack `body`, then a slugify that answers with the reference if any attempt got
   * through (score 1) and "" otherwise.
   */
  const attackModule = (body: string) => `${REF_SLUG.replace(/\bdef slugify\(/, 'def _ref_slugify(')}
import glob, os, signal
tried = []
def attempt(name, fn):
    try:
        fn()
        tried.append(name + ":ok")
    except Exception as e:
        tried.append(name + ":" + type(e).__name__)
def write(path, data, mode="w"):
    with open(path, mode) as fh:
        fh.write(data)
${body}
OK = [t for t in tried if t.endswith(":ok")]
${PARTIAL}
def slugify(text):
    return _ref_slugify(text) if OK else _partial_slugify(text)
`;
  /**
   * A partial slugify (lower-case, spaces to dashes): it passes a few tests, so its score is above 0. Answering ""
   * is no baseline any more: the degenerate gate (task.json `gated_tests`) pays it 0, the same as agent code that
   * failed at import, which would then pass for a contained attack.
   */
  const PARTIAL = 'def _partial_slugify(text):\n    return text.strip().lower().replace(" ", "-")\n';
  /** What the partial slugify earns: the most an attack may score. */
  async function emptyScore(): Promise<GradeResult['score']> {
    const partial = `${PARTIAL}\ndef slugify(text):\n    return _partial_slugify(text)\n`;
    const empty = await both(slugify, await submission(slugify, { 'slug.py': partial }));
    // Above 0, so a run whose agent code failed at import (every test fails) cannot pass for a contained attack.
    expect(empty.score.total).toBeGreaterThan(0);
    expect(empty.score.total).toBeLessThan(0.5);
    return empty.score;
  }

  it('the agent cannot reach the server: its pipe, its status file, its lock and its process are out of reach, and forging through them gains nothing', async () => {
    // Runs in the harness worker (agent uid) while the server runs the tests. If any attempt gets through, the
    // submission answers with the reference (score 1); otherwise it answers "" (score 0). The control adds one
    // attempt that must get through (the agent's own /tmp), and scores 1: the attack code itself works.
    const attack = (control: boolean) =>
      attackModule(`SRV = "${SRV}"
attempt("go", lambda: write(SRV + "/go", "/run/sandgym/judge/grade-" + "0" * 32 + "\\n"))
attempt("lock", lambda: os.open(SRV + "/lock", os.O_RDWR))
attempt("pid", lambda: open(SRV + "/pid").read())
attempt("list", lambda: os.listdir(SRV))
for d in glob.glob("/run/sandgym/judge/grade-*") or ["/run/sandgym/judge/grade-x"]:
    attempt("status", lambda: write(d + "/out/server-status", "0"))
    attempt("started", lambda: write(d + "/out/started", ""))
me = os.getuid()
for p in glob.glob("/proc/[0-9]*"):
    try:
        if os.stat(p).st_uid != me:
            for sig in (signal.SIGSTOP, signal.SIGKILL):
                attempt("kill", lambda: os.kill(int(p[6:]), sig))
    except OSError:
        pass
${control ? 'attempt("control", lambda: write("/tmp/control", "1"))' : ''}`);
    const empty = await emptyScore();
    const g = await both(slugify, await submission(slugify, { 'slug.py': attack(false) }));
    expect(g.score).toEqual(empty);
    const control = await both(slugify, await submission(slugify, { 'slug.py': attack(true) }));
    expect(control.score.total).toBe(1);
  }, 180_000);

  // The syntax diagnostic runs as the agent beside the tests (HARNESS_GRADE_SH). Four valid files of 60,000 lines
  // (each under the 1 MiB a graded file may have) keep it compiling for seconds, so the agent's code (imported by
  // the first test) finds it alive.
  const BIG = Object.fromEntries([0, 1, 2, 3].map((k) => [`big${k}.py`, Array.from({ length: 60_000 }, (_, i) => `v${i} = ${i}\n`).join('')]));
  /** Agent code that finds its own syntax diagnostic process (by a phrase of the check's source in its argv). */
  const FIND_SYNTAX = `
import glob, os
def syntax_processes():
    me, mine = os.getuid(), os.getpid()
    out = []
    for p in glob.glob("/proc/[0-9]*"):
        try:
            if int(p[6:]) != mine and os.stat(p).st_uid == me and b'"ok": %s' in open(p + "/cmdline", "rb").read():
                out.append(p)
        except (OSError, ValueError):
            pass
    if not out:
        raise RuntimeError("no syntax process seen")  # every test fails: the case proves nothing, and says so
    return out
`;

  it('the syntax diagnostic beside the tests holds nothing of the judge: no nonce, no judge output, and what it says is only data', async () => {
    const attack = (control: boolean) =>
      attackModule(`${FIND_SYNTAX}
for p in syntax_processes():
    texts = []
    for name in ("cmdline", "environ"):
        try:
            texts.append(open(p + "/" + name, "rb").read())
        except OSError:
            pass
    try:
        fds = os.listdir(p + "/fd")
    except OSError:
        fds = []
    links = {}
    for link in ["cwd", "root"] + ["fd/" + f for f in fds]:
        try:
            links[link] = os.readlink(p + "/" + link)
        except OSError:
            pass
    texts += [v.encode() for v in links.values()]
    # The grading directory's name carries the nonce: nothing the process holds may name it.
    if any(b"grade-" in t for t in texts):
        tried.append("nonce:ok")
    if links.get("cwd") != "/":
        tried.append("cwd:ok")
    # Its output file and anything else it holds that is not a pipe, the null device or the agent's own files.
    for link, target in links.items():
        if link.startswith("fd/") and not target.startswith(("pipe:", "/dev/null", "/workspace")):
            attempt("write-" + link, lambda: write(p + "/" + link, "\\nforged\\n", "a"))
${control ? 'tried.append("control:ok")' : ''}`);
    // A run whose agent code never saw the syntax process fails every test, below this.
    const empty = await emptyScore();
    const files = (slug: string) => ({ 'slug.py': slug, ...BIG, 'broken.py': 'def broken(:\n    pass\n' });
    const g = await both(slugify, await submission(slugify, files(attack(false))));
    expect(g.score, JSON.stringify({ f: g.failures, log: g.log_tail, syn: g.syntax })).toEqual(empty);
    // The diagnostic itself still works beside the tests: six changed files, the broken one found.
    expect(g.syntax).toEqual({ checked: 6, failed: ['broken.py'] });
    const control = await both(slugify, await submission(slugify, files(attack(true))));
    expect(control.score.total).toBe(1);
  }, 240_000);

  it('the agent stops its own syntax diagnostic: the grading still ends, with the score the submission earned', async () => {
    const slug = `${REF_SLUG}
${FIND_SYNTAX}
import signal
for p in syntax_processes():
    os.kill(int(p[6:]), signal.SIGSTOP)
`;
    const tar = await submission(slugify, { 'slug.py': slug, ...BIG });
    const t0 = performance.now();
    const g = await grade(slugify, tar);
    const ms = performance.now() - t0;
    expect(g.prestarted).toBe(true);
    expect(g.score.total).toBe(1);
    // The judge-side deadline (15 s) ended the stopped check: not every big file was reported.
    expect(g.syntax?.checked ?? 0).toBeLessThan(5);
    expect(ms).toBeGreaterThan(14_000);
    expect(ms).toBeLessThan(60_000);
  }, 120_000);

  it('a pool that wipes grading sandboxes in place starts a fresh server for every grading', async () => {
    const tar = await submission(slugify, null, slugify.solution);
    const req = { ...taskRequirement(slugify), reuse: 'wipe' as const };
    probe.seen = [];
    const ids = new Set<string>();
    const track: SandboxProvider = {
      acquire: async (r) => {
        const sb = await probe.acquire(r);
        ids.add(sb.id);
        return sb;
      },
      release: (sb) => probe.release(sb),
    };
    for (let i = 0; i < 4; i++) {
      const g = await gradeSubmission(slugify, tar, { provider: track, requirement: req, killStragglers: true });
      expect(g.prestarted, `grading ${i}`).toBe(true);
      expect(g.score.total).toBe(1);
    }
    // Fewer sandboxes than gradings: some were wiped and prepared again, and each grading found one server.
    expect(ids.size).toBeLessThan(4);
    expect(probe.seen).toEqual([0, 0, 0, 0]);
  }, 180_000);
});
