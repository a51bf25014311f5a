// How a submission is graded in a FRESH grading sandbox, as pure functions that produce the files
// and commands (grade.ts runs them).
//
// Harness formats (pytest-harness, planHarnessGrading below): pytest and the hidden tests run AS THE JUDGE in
// a fresh directory under JUDGE_WORKDIR (unreadable by the agent uid), with nothing of the workspace on
// sys.path; workspace code runs only in the harness worker, started by the tests as the agent uid. The report
// and the agent-facing messages are written in the judge's directory: no agent process can touch them.
//
// Trusted (in-process) formats, the rest of this file: the agent controls every byte of its workspace
// and the code under test runs inside the test process. So:
//  - the runner gets a runner-only view (workspace-filter.ts runnerView): runner files as the task shipped them, no conftest/ini/site hooks/own tests of the agent;
//  - hidden tests and the report live in a fresh directory with a random name outside the
//    workspace, created 0700 just before the run; tests are made read-only and re-hashed after;
//  - the runner starts from an empty environment (env -i), python -I -B (no cwd/PYTHONPATH/user
//    site on sys.path, no bytecode), a generated ini (-c) so no workspace config is read, the
//    cache provider and plugin autoload off, --rootdir/--confcutdir at the hidden tests;
//  - only the JUnit XML counts (never the exit code or printed text), and it is handed back framed
//    by a nonce that travels on stdin (not argv or env, which the code under test can read), so
//    printed or forged frames cannot be mistaken for the real report;
//  - the collected count must equal the task's expected_tests, else 0 (os._exit/sys.exit at import).
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { JUDGE_WORKDIR } from '../../../sandbox-contract/index.js';
import type { ExecRequest, FileEntry } from '../sandbox-api.js';
import type { SubmissionEntry } from '../workspace/capture.js';
import { isHarnessFormat, type LoadedTask } from './task-types.js';
import { NODE_HARNESS_FILES, NODE_HARNESS_PACKAGE } from './harness/node/files.js';

export interface GradingLayout {
  workspace: string;
  /** Fresh per grading run: <scratch>/sandgym-grade-<nonce>. */
  root: string;
  tests: string;
  out: string;
  report: string;
  home: string;
  tmp: string;
  ini: string;
  syntaxScript: string;
  syntaxList: string;
  runScript: string;
  gradeScript: string;
  /** JUnit reporter module for node --test (Node 18.19+ has custom reporters, not the junit one). */
  reporter: string;
}

export function newGradingNonce(): string {
  return randomBytes(16).toString('hex');
}

export function gradingLayout(nonce: string, opts: { workspace?: string; scratch?: string } = {}): GradingLayout {
  if (!/^[0-9a-f]{16,64}$/.test(nonce)) throw new RangeError('nonce must be 16..64 lowercase hex digits');
  const workspace = (opts.workspace ?? '/workspace').replace(/\/+$/, '');
  const root = `${(opts.scratch ?? '/tmp').replace(/\/+$/, '')}/sandgym-grade-${nonce}`;
  return {
    workspace,
    root,
    tests: `${root}/tests`,
    out: `${root}/out`,
    report: `${root}/out/report.xml`,
    home: `${root}/home`,
    tmp: `${root}/tmp`,
    ini: `${root}/pytest.ini`,
    syntaxScript: `${root}/syntax.py`,
    syntaxList: `${root}/changed.txt`,
    runScript: `${root}/run.sh`,
    gradeScript: `${root}/grade.sh`,
    reporter: `${root}/junit-reporter.mjs`,
  };
}

export interface RunnerOptions {
  /** Interpreter paths inside the grading sandbox (defaults: python3, node found on PATH). */
  python?: string;
  node?: string;
  /** PATH of the runner's empty environment. */
  path?: string;
  /** Harness formats: the judge's directory (default JUDGE_WORKDIR; host stand-ins in tests use a temp dir). */
  judgeDir?: string;
  /**
   * Harness formats, TESTS ONLY: the host stand-in has one uid, so the worker runs as the judge's own uid and no
   * `kill -1` sweep runs (it would kill the host's processes). Never set for a real sandbox.
   */
  sameUidWorker?: boolean;
  /** pytest-harness: start the worker when pytest starts, before collection (default true; false: at first use, the bench's baseline). */
  prestartWorker?: boolean;
  /**
   * pytest-harness: grade with the judge's pytest pre-started in the grading sandbox (pytestServerPrepare, run by
   * the pool before the sandbox is handed out) when one is waiting there (default true; false: always start
   * pytest in the run, the bench's baseline). Without a waiting server the run starts pytest itself.
   */
  prestartServer?: boolean;
}

export const DEFAULT_RUNNER_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** POSIX single-quote: every argv element reaches the program byte for byte. */
export function shellQuote(arg: string): string {
  if (/^[A-Za-z0-9_@%+=:,./-]+$/.test(arg)) return arg;
  return `'${arg.replace(/'/g, `'\\''`)}'`;
}

export function pytestIni(layout: GradingLayout): string {
  return [
    '[pytest]',
    '# generated by sandgym: the only configuration pytest reads while grading',
    'addopts =',
    `pythonpath = ${layout.workspace}`,
    'python_files = test_*.py *_test.py',
    'junit_family = xunit2',
    'junit_logging = no',
    '',
  ].join('\n');
}

function cleanEnv(layout: GradingLayout, opts: RunnerOptions): string[] {
  return [
    `PATH=${opts.path ?? DEFAULT_RUNNER_PATH}`,
    `HOME=${layout.home}`,
    `TMPDIR=${layout.tmp}`,
    'LANG=C.UTF-8',
    'LC_ALL=C.UTF-8',
    `SANDGYM_WORKSPACE=${layout.workspace}`,
    'PYTHONDONTWRITEBYTECODE=1',
    'PYTHONNOUSERSITE=1',
    'PYTHONHASHSEED=0',
    'PYTEST_DISABLE_PLUGIN_AUTOLOAD=1',
    'PYTEST_ADDOPTS=',
    'NODE_OPTIONS=',
    'NO_COLOR=1',
  ];
}

/** The test runner's full argv (env -i ... runner isolation-flags report tests). */
export function runnerArgv(task: LoadedTask, layout: GradingLayout, opts: RunnerOptions = {}): string[] {
  const t = task.spec.test;
  const testPaths = task.tests
    .filter((f) => (t.format === 'pytest-junit' ? /(^|\/)(test_[^/]*|[^/]*_test)\.py$/.test(f.path) : /\.test\.[cm]?js$/.test(f.path)))
    .map((f) => `${layout.tests}/${f.path}`);
  const env = ['env', '-i', ...cleanEnv(layout, opts)];
  if (t.format === 'pytest-junit') {
    const extra = t.command.slice(3);
    return [
      ...env,
      opts.python ?? 'python3',
      '-I',
      '-B',
      '-m',
      'pytest',
      ...extra,
      '-c',
      layout.ini,
      `--rootdir=${layout.tests}`,
      `--confcutdir=${layout.tests}`,
      '-p',
      'no:cacheprovider',
      '-o',
      'addopts=',
      `--basetemp=${layout.tmp}/pytest`,
      `--junitxml=${layout.report}`,
      '-q',
      ...testPaths,
    ];
  }
  const extra = t.command.slice(2);
  return [...env, opts.node ?? 'node', '--test', ...extra, `--test-reporter=${layout.reporter}`, `--test-reporter-destination=${layout.report}`, ...testPaths];
}

/**
 * Syntax component: compiles each changed file without running it (compile(), node --check,
 * bash -n, json.loads), so this step cannot be influenced by the code it checks.
 */
export const SYNTAX_CHECK_PY = `
# Started once per grading, beside the tests: it imports only sys (json, subprocess on demand) and runs with -S, so
# its interpreter start (~13 ms of CPU here, was ~35 with json, subprocess and site) takes little from the tests.
import sys
node, listing = sys.argv[1], sys.argv[2]
with open(listing, encoding="utf-8") as fh:
    paths = [p for p in fh.read().split("\\n") if p]
def q(s):
    # A JSON string, ASCII only (as json.dumps writes it), for any path, lone surrogates included.
    out = []
    for c in s:
        o = ord(c)
        if 0x20 <= o < 0x7f and c != '"' and c != "\\\\":
            out.append(c)
        elif o > 0xFFFF:
            o -= 0x10000
            out.append("\\\\u%04x\\\\u%04x" % (0xD800 + (o >> 10), 0xDC00 + (o & 0x3FF)))
        else:
            out.append("\\\\u%04x" % o)
    return '"' + "".join(out) + '"'
def run(argv):
    import subprocess
    return subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30).returncode == 0
for p in paths:
    ok = None
    try:
        if p.endswith(".py"):
            with open(p, "rb") as fh:
                compile(fh.read(), p, "exec", dont_inherit=True)
            ok = True
        elif p.endswith((".js", ".mjs", ".cjs")):
            ok = run([node, "--check", p])
        elif p.endswith((".sh", ".bash")):
            ok = run(["bash", "-n", p])
        elif p.endswith(".json"):
            import json
            with open(p, "rb") as fh:
                json.loads(fh.read().decode("utf-8"))
            ok = True
    except Exception:
        ok = False
    if ok is not None:
        print('{"path": %s, "ok": %s}' % (q(p), "true" if ok else "false"), flush=True)
`;

/**
 * JUnit XML reporter module for `node --test` (node-junit-reporter.mjs), so grading does not depend
 * on Node >= 20.13's built-in `junit` reporter (Debian bookworm ships Node 18.20, which has custom
 * reporters). Written into the grading directory and loaded with --test-reporter=<path>.
 */
export const NODE_JUNIT_REPORTER = readFileSync(new URL('./node-junit-reporter.mjs', import.meta.url), 'utf8');

/**
 * Runs syntax check then tests and hands results back on stdout framed by the nonce read from
 * stdin. Only this script's own output carries frames; the runner's output goes to a log file.
 */
export const GRADE_SH = `set -u
IFS= read -r nonce || exit 97
root=$1; limit=$2; kill_stragglers=\${3:-0}; preflight=\${4:-1}
frame() { printf '\\n%s:%s\\n' "$nonce" "$1"; }
# Before any agent code runs: can this image run the task's test runner at all? If not, that is an
# infrastructure problem (SandboxFailure), never a score of 0. Skipped (preflight=0) only for an image
# content id that already passed it (grade.ts): the answer is a property of the image.
if [ "$preflight" != 0 ] && ! sh "$root/preflight.sh" >"$root/out/preflight.log" 2>&1; then
  frame preflight:failed
  frame log:begin
  tail -c 2000 "$root/out/preflight.log" | base64 | tr -d '\\n'
  frame log:end
  frame done
  exit 0
fi
frame syntax:begin
sh "$root/syntax.sh" 2>/dev/null
frame syntax:end
chmod -R a-w "$root/tests" "$root/pytest.ini" 2>/dev/null
# Processes the code under test leaves behind (same user) could rewrite the report after the runner
# exits. Inside a sandbox's own PID namespace, every process that did not exist before the run is
# killed (up to 10 sweeps: children of a killed process are re-parented to init and found next
# time). Spared: this shell, its own subshells, and children of processes older than the run other
# than init (the sandbox's command channel and its watchdog), so the sandbox itself survives.
# kill -1 would also kill the channel, which runs as the same user.
is_old() { case "$snap" in *" $1 "*) return 0;; esac; return 1; }
sweep() {
  r=0
  while [ "$r" -lt 10 ]; do
    r=$((r + 1)); found=0
    for p in /proc/[0-9]*; do
      p=\${p#/proc/}
      [ "$p" = "$$" ] && continue
      is_old "$p" && continue
      pp=
      while read -r k v; do if [ "$k" = PPid: ]; then pp=$v; break; fi; done 2>/dev/null <"/proc/$p/status"
      [ -n "$pp" ] || continue
      [ "$pp" = "$$" ] && continue
      if [ "$pp" != 1 ] && is_old "$pp"; then continue; fi
      kill -9 "$p" 2>/dev/null && found=1
    done
    [ "$found" = 0 ] && break
  done
}
snap=" $(cd /proc && echo [0-9]*) "
timeout -k 5 "$limit" sh "$root/run.sh" </dev/null >"$root/out/runner.log" 2>&1
status=$?
if [ "$kill_stragglers" = 1 ]; then sweep; fi
frame "status:$status"
if [ -f "$root/out/report.xml" ] && [ ! -L "$root/out/report.xml" ]; then
  frame report:begin
  base64 <"$root/out/report.xml" | tr -d '\\n'
  frame report:end
fi
frame hashes:begin
(cd "$root/tests" && find . -type f -exec sha256sum {} +)
frame hashes:end
frame log:begin
tail -c 4000 "$root/out/runner.log" | base64 | tr -d '\\n'
frame log:end
frame done
`;

/** Runner availability checks (no agent code involved): pytest importable; node >= 18.19 (custom reporters). */
const PYTEST_PREFLIGHT = 'import importlib.util, sys; sys.exit(0 if importlib.util.find_spec("pytest") else "pytest is not installed for " + sys.executable)';
const NODE_PREFLIGHT =
  'const [a, b] = process.versions.node.split(".").map(Number); if (!(a > 18 || (a === 18 && b >= 19))) { console.error("node " + process.version + " < 18.19 (no custom test reporters)"); process.exit(3); }';

export interface GradingPlan {
  nonce: string;
  layout: GradingLayout;
  /** Creates the fresh grading directory (fails if it exists: a fresh sandbox has none); none for harness plans. */
  prepare: ExecRequest | null;
  /** Harness plans: files are put and the run executes with identity 'judge'. */
  judge: boolean;
  /** Hidden tests, generated ini and scripts (absolute paths). */
  files: FileEntry[];
  /** Syntax check + tests; stdin carries the nonce. */
  run: ExecRequest;
  /** sha256 of each hidden test file as shipped, keyed "./<path>" like sha256sum prints it. */
  testHashes: Record<string, string>;
}

// One entry of the submission as captured before any workspace code ran (issue 30): what the harnesses' read helpers
// answer from (docs/TASKS.md, "Reading files: two views"). Declared once, by the workspace capture.
export type { SubmissionEntry };

/** The capture as the harnesses read it: a judge-only JSON file (base64 contents), loaded lazily by the tests. */
export function submissionJson(entries: readonly SubmissionEntry[]): string {
  const out = entries.map((e) => ({
    path: e.path,
    type: e.type,
    mode: e.mode,
    ...(e.type === 'file' ? { content: Buffer.from(e.content ?? new Uint8Array()).toString('base64') } : {}),
    ...(e.type === 'symlink' ? { target: e.target ?? '' } : {}),
  }));
  return JSON.stringify({ version: 1, entries: out });
}

export interface PlanOptions extends RunnerOptions {
  nonce?: string;
  /**
   * Harness formats: the submission as captured before any workspace code ran. Written into the judge's grading dir
   * (submission.json, 0400 inside the 0700 judge dir); the harnesses' read helpers answer from it. Without it they
   * read the current files through a fresh reader (host stand-ins and direct uses only: the grader always gives it).
   */
  submission?: readonly SubmissionEntry[];
  workspace?: string;
  scratch?: string;
  /** Changed files (relative to the workspace) for the syntax component. */
  changed?: readonly string[];
  max_output_bytes?: number;
  /**
   * After the runner exits, SIGKILL every process started during the run (see GRADE_SH) before the
   * report is read. Only safe inside a sandbox with its own PID namespace: never on a host.
   */
  killStragglers?: boolean;
  /**
   * Run the runner-availability preflight (default true). false only when this image (by content id) and
   * these runner options already passed it: grade.ts remembers that (preflightKey), nothing else may.
   */
  preflight?: boolean;
  /**
   * Step budget (ms) the whole run must fit in (preflight, syntax check, tests, report). When set, the
   * test limit is min(task timeout, budget - 20 s) and the run's own deadline is the budget, so a hung
   * test run always ends by the test limit (status 124, "tests timed out"), never by a deadline race.
   */
  budgetMs?: number;
}

/** Seconds reserved in a run's budget for preflight, the syntax check and the kill grace around the test limit. */
export const RUN_OVERHEAD_S = 20;

/** The test limit and the run's deadline for a task under an optional step budget. */
export function runLimits(taskTimeoutS: number, budgetMs?: number): { testLimitS: number; runTimeoutMs: number } {
  if (budgetMs === undefined) return { testLimitS: taskTimeoutS, runTimeoutMs: (taskTimeoutS + 90) * 1000 };
  const testLimitS = Math.min(taskTimeoutS, Math.floor(budgetMs / 1000) - RUN_OVERHEAD_S);
  if (testLimitS < 1) throw new RangeError(`a grading budget of ${budgetMs} ms leaves no time for the tests (needs more than ${RUN_OVERHEAD_S + 1} s)`);
  return { testLimitS, runTimeoutMs: budgetMs };
}

const SYNTAX_EXT = /\.(py|js|mjs|cjs|sh|bash|json)$/;

export function planGrading(task: LoadedTask, opts: PlanOptions = {}): GradingPlan {
  if (task.spec.test.format === 'node-harness') return planNodeHarnessGrading(task, opts);
  if (isHarnessFormat(task.spec.test.format)) return planHarnessGrading(task, opts);
  const nonce = opts.nonce ?? newGradingNonce();
  const layout = gradingLayout(nonce, opts);
  const { testLimitS: timeoutS, runTimeoutMs } = runLimits(task.spec.test.timeout_s, opts.budgetMs);
  const runnerLine = `cd ${shellQuote(layout.workspace)} && exec ${runnerArgv(task, layout, opts).map(shellQuote).join(' ')}\n`;
  const preflightLine =
    task.spec.test.format === 'pytest-junit'
      ? `exec ${['env', '-i', ...cleanEnv(layout, opts), opts.python ?? 'python3', '-I', '-B', '-c', PYTEST_PREFLIGHT].map(shellQuote).join(' ')}\n`
      : `exec ${['env', '-i', ...cleanEnv(layout, opts), opts.node ?? 'node', '-e', NODE_PREFLIGHT].map(shellQuote).join(' ')}\n`;
  const syntaxLine = `exec ${['env', '-i', ...cleanEnv(layout, opts), opts.python ?? 'python3', '-I', '-S', '-B', layout.syntaxScript, opts.node ?? 'node', layout.syntaxList].map(shellQuote).join(' ')}\n`;
  const changed = (opts.changed ?? []).filter((p) => SYNTAX_EXT.test(p)).map((p) => `${layout.workspace}/${p}`);
  const files: FileEntry[] = [
    ...task.tests.map((f) => ({ path: `${layout.tests}/${f.path}`, content: f.content, mode: 0o444 })),
    { path: layout.ini, content: pytestIni(layout), mode: 0o444 },
    { path: layout.syntaxScript, content: SYNTAX_CHECK_PY, mode: 0o444 },
    { path: layout.syntaxList, content: changed.join('\n') + (changed.length ? '\n' : ''), mode: 0o444 },
    { path: `${layout.root}/syntax.sh`, content: syntaxLine, mode: 0o444 },
    { path: `${layout.root}/preflight.sh`, content: preflightLine, mode: 0o444 },
    { path: layout.runScript, content: runnerLine, mode: 0o444 },
    { path: layout.gradeScript, content: GRADE_SH, mode: 0o444 },
    ...(task.spec.test.format === 'node-test-junit' ? [{ path: layout.reporter, content: NODE_JUNIT_REPORTER, mode: 0o444 }] : []),
  ];
  const prepare: ExecRequest = {
    argv: ['sh', '-c', 'umask 077 && mkdir "$1" && mkdir "$1/tests" "$1/out" "$1/home" "$1/tmp"', 'sandgym-prepare', layout.root],
    timeout_ms: 30_000,
  };
  const run: ExecRequest = {
    argv: ['sh', layout.gradeScript, layout.root, String(timeoutS), opts.killStragglers ? '1' : '0', opts.preflight === false ? '0' : '1'],
    cwd: layout.workspace,
    stdin: `${nonce}\n`,
    timeout_ms: runTimeoutMs,
    max_output_bytes: opts.max_output_bytes ?? 16 * 1024 * 1024,
  };
  const testHashes: Record<string, string> = {};
  for (const f of task.tests) testHashes[`./${f.path}`] = f.sha256;
  return { nonce, layout, prepare, files, run, testHashes, judge: false };
}

export interface RunOutput {
  /** Exit status of the runner (124/137: timed out). Informational only: never scored. */
  status: number | null;
  timed_out: boolean;
  report: Uint8Array | null;
  hashes: Record<string, string>;
  syntax: { path: string; ok: boolean }[];
  log_tail: string;
  complete: boolean;
  /** The image cannot run the task's runner (pytest missing, node too old): infrastructure, not a score. */
  preflight_failed: boolean;
  /** Harness plans: the judge-written agent-facing results (sandgym_harness's agent.json), raw. */
  messages: Uint8Array | null;
  /** pytest-harness: the tests ran in the judge's pytest pre-started in the sandbox (PlanOptions.prestartServer). */
  prestarted: boolean;
}

/** Extracts the nonce-framed sections; frames appearing twice mean tampering (report dropped). */
export function parseRunOutput(stdout: string, nonce: string, workspace = '/workspace'): RunOutput {
  const lines = stdout.split('\n');
  const sections = new Map<string, string[]>();
  const counts = new Map<string, number>();
  let current: string | null = null;
  let status: number | null = null;
  let complete = false;
  const prefix = `${nonce}:`;
  for (const line of lines) {
    if (line.startsWith(prefix)) {
      const tag = line.slice(prefix.length);
      counts.set(tag, (counts.get(tag) ?? 0) + 1);
      if (tag.endsWith(':begin')) {
        current = tag.slice(0, -':begin'.length);
        sections.set(current, []);
      } else if (tag.endsWith(':end')) current = null;
      else if (tag.startsWith('status:')) status = /^-?\d+$/.test(tag.slice(7)) ? Number(tag.slice(7)) : null;
      else if (tag === 'done') complete = true;
      continue;
    }
    if (current !== null) sections.get(current)?.push(line);
  }
  const duplicated = [...counts.values()].some((n) => n > 1);
  const reportB64 = sections.get('report')?.join('').trim();
  const messagesB64 = sections.get('messages')?.join('').trim();
  const hashes: Record<string, string> = {};
  for (const l of sections.get('hashes') ?? []) {
    const m = /^([0-9a-f]{64}) [ *](.+)$/.exec(l);
    if (m && m[1] && m[2]) hashes[m[2]] = m[1];
  }
  const syntax: RunOutput['syntax'] = [];
  const wsPrefix = `${workspace.replace(/\/+$/, '')}/`;
  // Harness grade scripts hand the diagnostic back base64-encoded (it ran beside the agent's code: it is data).
  const syntaxB64 = sections.get('syntax-b64');
  const syntaxLines = syntaxB64 !== undefined ? Buffer.from(syntaxB64.join(''), 'base64').toString('utf8').split('\n') : (sections.get('syntax') ?? []);
  for (const l of syntaxLines) {
    try {
      const v = JSON.parse(l) as { path?: unknown; ok?: unknown };
      if (typeof v.path === 'string' && typeof v.ok === 'boolean')
        syntax.push({ path: v.path.startsWith(wsPrefix) ? v.path.slice(wsPrefix.length) : v.path, ok: v.ok });
    } catch {
      /* not a result line */
    }
  }
  return {
    status,
    timed_out: status === 124 || status === 137,
    report: !duplicated && reportB64 ? new Uint8Array(Buffer.from(reportB64, 'base64')) : null,
    hashes,
    syntax,
    log_tail: Buffer.from(sections.get('log')?.join('') ?? '', 'base64').toString('utf8'),
    complete: complete && !duplicated,
    preflight_failed: (counts.get('preflight:failed') ?? 0) === 1 && !duplicated,
    messages: !duplicated && messagesB64 ? new Uint8Array(Buffer.from(messagesB64, 'base64')) : null,
    prestarted: (counts.get('runner:prestarted') ?? 0) === 1 && !duplicated,
  };
}

/** Which hidden test files changed or vanished during the run (empty: intact). */
export function tamperedTests(expected: Record<string, string>, actual: Record<string, string>): string[] {
  const bad = Object.keys(expected).filter((p) => actual[p] !== expected[p]);
  const extra = Object.keys(actual).filter((p) => !(p in expected));
  return [...bad, ...extra].sort();
}

// ---- harness formats (pytest-harness) ---------------------------------------------------------------------

const HARNESS_DIR = new URL('./harness/python/', import.meta.url);
/** Judge side of the Python harness (imported by the hidden tests) and its worker (started by it as the agent). */
export const HARNESS_PY = readFileSync(new URL('sandgym_harness.py', HARNESS_DIR), 'utf8');
export const HARNESS_WORKER_PY = readFileSync(new URL('worker.py', HARNESS_DIR), 'utf8');
/** The judge's pre-started pytest (pytest_server.py): see pytestServerPrepare. */
export const PYTEST_SERVER_PY = readFileSync(new URL('pytest_server.py', HARNESS_DIR), 'utf8');
/**
 * What the prepare command feeds `python3 -I -B -`: the harness's source as a string literal (a JSON string is a
 * valid Python one), so the server compiles it before any grading, then the server program.
 */
const PYTEST_SERVER_STDIN = `HARNESS_SOURCE = ${JSON.stringify(HARNESS_PY)}\n${PYTEST_SERVER_PY}`;
/** Loads the harness's pytest hooks (agent-facing messages, worker shutdown) for every hidden test file. */
export const HARNESS_CONFTEST = `# generated by sandgym: the harness's pytest hooks
from sandgym_harness import pytest_collection_modifyitems, pytest_configure, pytest_runtest_logreport, pytest_runtest_makereport, pytest_sessionfinish  # noqa: F401
`;

/**
 * The grading script of harness plans, run AS THE JUDGE (cwd: the grading dir under JUDGE_WORKDIR; nonce on
 * stdin). Agent-uid processes only ever get data through argv/stdin and write only to their own pipes or files the
 * judge opened for them: the syntax check runs as the agent beside the tests (it opens the agent's files; its
 * output is data, base64 in the frames), pytest runs as the judge and starts the harness worker as the agent
 * itself. Afterwards every agent process dies (nothing survives into the report reading).
 */
export const HARNESS_GRADE_SH = `set -u
IFS= read -r nonce || exit 97
root=$1; limit=$2; same_uid=\${3:-0}; preflight=\${4:-1}
frame() { printf '\\n%s:%s\\n' "$nonce" "$1"; }
if [ "$same_uid" = 1 ]; then
  as_agent_prefix=
  sweep() { :; }
else
  case "\${SANDGYM_AGENT_UID:-}" in ''|0|*[!0-9]*) frame preflight:failed; frame log:begin; printf 'no agent uid (SANDGYM_AGENT_UID) in the judge environment' | base64 | tr -d '\\n'; frame log:end; frame done; exit 0;; esac
  as_agent_prefix="nsenter -S $SANDGYM_AGENT_UID -G $SANDGYM_AGENT_UID --"
  sweep() { nsenter -S "$SANDGYM_AGENT_UID" -G "$SANDGYM_AGENT_UID" -- kill -9 -1 2>/dev/null; :; }
fi
if [ "$preflight" != 0 ] && ! sh "$root/preflight.sh" "$same_uid" >"$root/out/preflight.log" 2>&1; then
  frame preflight:failed
  frame log:begin
  tail -c 2000 "$root/out/preflight.log" | base64 | tr -d '\\n'
  frame log:end
  frame done
  exit 0
fi
# The syntax diagnostic (never a reward component) runs as the agent BESIDE the tests, so its interpreter start is
# off the critical path. The agent's code runs at the same time and may stop, trace or kill it, so it holds nothing
# of the judge's: cwd /, its list on a pipe, its output in a 0600 judge file whose name carries no nonce (and never
# the judge's stdout), oom_score_adj 1000 like the worker, and a judge-side deadline, so waiting for it ends. Its
# output goes back base64-encoded: whatever it says is data. Its deadline (15 s + 2) keeps the wait for it after
# the tests inside the run's reserve (RUN_OVERHEAD_S) whatever the agent does to it.
syntax_out="\${root%/*}/syntax-$$.out"
syntax_check() {
  cd / || return 0
  echo 1000 >/proc/self/oom_score_adj 2>/dev/null
  agent_env=$(cat "$root/env.txt"); py=$(cat "$root/python.txt"); node=$(cat "$root/node.txt")
  exec timeout -k 2 15 $as_agent_prefix env -i $agent_env "$py" -I -S -B -c "$(cat "$root/syntax.py")" "$node" - 2>/dev/null
}
{ umask 077; cat "$root/changed.txt" | syntax_check >"$syntax_out"; } &
syntax_pid=$!
timeout -k 5 "$limit" sh "$root/run.sh" </dev/null >"$root/out/runner.log" 2>&1
status=$?
wait "$syntax_pid"
sweep
frame "status:$status"
frame syntax-b64:begin
if [ -f "$syntax_out" ] && [ ! -L "$syntax_out" ]; then head -c 1048576 "$syntax_out" | base64 -w 0; fi
frame syntax-b64:end
rm -f "$syntax_out"
# Which pytest ran the tests: the one pre-started in this sandbox (run.sh handed it the run) or one run.sh started.
if [ -f "$root/out/started" ]; then frame runner:prestarted; fi
if [ -f "$root/out/report.xml" ] && [ ! -L "$root/out/report.xml" ]; then
  frame report:begin
  base64 -w 0 <"$root/out/report.xml"
  frame report:end
fi
if [ -f "$root/out/agent.json" ] && [ ! -L "$root/out/agent.json" ]; then
  frame messages:begin
  head -c 1048576 "$root/out/agent.json" | base64 -w 0
  frame messages:end
fi
frame hashes:begin
# The last steps: no subshell for the cd (every path after it is absolute).
cd "$root/tests" && find . -type f -exec sha256sum {} +
frame hashes:end
frame log:begin
tail -c 4000 "$root/out/runner.log" | base64 -w 0
frame log:end
frame done
`;

/** Agent limits mirrored onto the harness worker (the judge's exec does not apply them to processes it starts). */
const WORKER_DEFAULT_LIMITS = { memory_mb: 512, pids: 256, nofile: 1024 };

export interface HarnessConfig {
  workspace: string;
  python: string;
  path: string;
  call_timeout_s: number;
  same_uid: boolean;
  messages: string;
  tmp: string;
  data_mb: number;
  nproc: number;
  nofile: number;
  /** Spawn the worker at pytest_configure, so its start overlaps collection (RunnerOptions.prestartWorker). */
  prestart: boolean;
  /** The submission capture (PlanOptions.submission), when given. */
  submission?: string;
  /** task.json `exceptions`: the builtin base each workspace exception class must have. */
  exceptions: Record<string, string>;
}

export function harnessLayout(nonce: string, opts: { workspace?: string; judgeDir?: string } = {}): GradingLayout {
  if (!/^[0-9a-f]{16,64}$/.test(nonce)) throw new RangeError('nonce must be 16..64 lowercase hex digits');
  const workspace = (opts.workspace ?? '/workspace').replace(/\/+$/, '');
  const root = `${(opts.judgeDir ?? JUDGE_WORKDIR).replace(/\/+$/, '')}/grade-${nonce}`;
  return {
    workspace,
    root,
    tests: `${root}/tests`,
    out: `${root}/out`,
    report: `${root}/out/report.xml`,
    home: `${root}/home`,
    tmp: `${root}/tmp`,
    ini: `${root}/pytest.ini`,
    syntaxScript: `${root}/syntax.py`,
    syntaxList: `${root}/changed.txt`,
    runScript: `${root}/run.sh`,
    gradeScript: `${root}/grade.sh`,
    reporter: `${root}/junit-reporter.mjs`,
  };
}

export function harnessPytestIni(layout: GradingLayout): string {
  return [
    '[pytest]',
    '# generated by sandgym: the only configuration pytest reads while grading',
    'addopts =',
    `pythonpath = ${layout.root}/harness`,
    'python_files = test_*.py *_test.py',
    'junit_family = xunit2',
    'junit_logging = no',
    '',
  ].join('\n');
}

/** The judge's pytest argv (run from the grading dir, test paths relative to it). */
export function harnessRunnerArgv(task: LoadedTask, layout: GradingLayout, opts: RunnerOptions = {}): string[] {
  const testPaths = task.tests.filter((f) => /(^|\/)(test_[^/]*|[^/]*_test)\.py$/.test(f.path)).map((f) => `tests/${f.path}`);
  return [
    opts.python ?? 'python3',
    '-I',
    '-B',
    '-m',
    'pytest',
    ...task.spec.test.command.slice(3),
    '-c',
    layout.ini,
    `--rootdir=${layout.root}`,
    `--confcutdir=${layout.root}`,
    '-p',
    'no:cacheprovider',
    '-o',
    'addopts=',
    `--basetemp=${layout.tmp}/pytest`,
    `--junitxml=${layout.report}`,
    '--assert=plain',
    // Tracebacks only reach the operators' log tail (scores come from the report, the agent's messages from the
    // harness). pytest's own styles re-parse the whole source file of every frame (ast) for each failure: with
    // the harness's frames in every traceback that was ~80 ms of CPU per failing test here, 1.3 s for a
    // submission failing 18 tests. Python's native format reads lines only. After the task's own options: ours.
    '--tb=native',
    '-q',
    ...testPaths,
  ];
}

function harnessEnv(layout: GradingLayout, opts: RunnerOptions): string[] {
  return [
    `PATH=${opts.path ?? DEFAULT_RUNNER_PATH}`,
    `HOME=${layout.home}`,
    `TMPDIR=${layout.tmp}`,
    'LANG=C.UTF-8',
    'LC_ALL=C.UTF-8',
    'PYTHONDONTWRITEBYTECODE=1',
    'PYTHONNOUSERSITE=1',
    'PYTHONHASHSEED=0',
    'PYTEST_DISABLE_PLUGIN_AUTOLOAD=1',
    'PYTEST_ADDOPTS=',
    'NO_COLOR=1',
    `SANDGYM_HARNESS_CONFIG=${layout.root}/harness.json`,
  ];
}

/** Syntax check as the agent: the listing arrives on stdin ("-"), the script as -c text (the agent cannot read judge files). */
const SYNTAX_CHECK_STDIN_PY = SYNTAX_CHECK_PY.replace(
  'with open(listing, encoding="utf-8") as fh:\n    paths = [p for p in fh.read().split("\\n") if p]',
  'paths = [p for p in (sys.stdin.read() if listing == "-" else open(listing, encoding="utf-8").read()).split("\\n") if p]',
);
if (SYNTAX_CHECK_STDIN_PY === SYNTAX_CHECK_PY) throw new Error('grader-plan: the syntax check script changed; update SYNTAX_CHECK_STDIN_PY');

/** Where the pre-started pytest waits (pytest_server.py): a directory of the judge's own. */
export function pytestServerDir(opts: { judgeDir?: string } = {}): string {
  return `${(opts.judgeDir ?? JUDGE_WORKDIR).replace(/\/+$/, '')}/pytest-server`;
}

/**
 * The first part of a pytest-harness run.sh: hand the run to the pytest pre-started in this sandbox if one waits
 * there, and wait for it to end (its lock). When the server never took the run (none waiting, or it died before
 * it wrote out/started), the direct line after this part starts pytest as before: nothing of the tests has run.
 * The run's deadline (grade.sh's `timeout` signals run.sh's process group) kills the server through the TERM
 * trap: the server is not run.sh's child.
 */
function serverRunLine(layout: GradingLayout, opts: RunnerOptions): string {
  const srv = shellQuote(pytestServerDir(opts));
  return [
    `cd ${shellQuote(layout.root)} || exit 1`,
    `if [ -p ${srv}/go ] && [ -f ${srv}/pid ] && command -v flock >/dev/null 2>&1; then`,
    `  read -r pid <${srv}/pid`,
    `  trap 'kill -9 "$pid" 2>/dev/null; exit 143' TERM INT HUP`,
    `  exec 3<>${srv}/go`,
    `  printf '%s\\n' ${shellQuote(layout.root)} >&3`,
    '  exec 3>&-',
    `  flock -s ${srv}/lock true </dev/null & wait $!`,
    '  if [ -f out/started ]; then',
    '    s=137',
    '    [ -f out/server-status ] && read -r s <out/server-status',
    '    exit "$s"',
    '  fi',
    '  trap - TERM INT HUP',
    'fi',
    '',
  ].join('\n');
}

/** Starts the judge's pytest server (pytest_server.py); run by the pool before the sandbox is handed out. */
const PREPARE_SH = `set -u
srv=$1
command -v flock >/dev/null 2>&1 || { echo 'flock is not installed: gradings start pytest themselves' >&2; exit 0; }
mkdir -p "$srv" && chmod 700 "$srv" || exit 1
# A server still waiting (unused, across an in-place wipe) stays; anything else left there is stale.
if [ -p "$srv/go" ] && ! flock -n "$srv/lock" true 2>/dev/null; then exit 0; fi
rm -f "$srv/go" "$srv/go.new" "$srv/pid"
exec env -i "PATH=$3" "HOME=$srv" LANG=C.UTF-8 LC_ALL=C.UTF-8 PYTHONDONTWRITEBYTECODE=1 PYTHONNOUSERSITE=1 PYTHONHASHSEED=0 PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 NO_COLOR=1 "SANDGYM_AGENT_UID=\${SANDGYM_AGENT_UID:-}" "$2" -I -B - "$srv"
`;

/**
 * The pool's prepare command (SandboxRequirement.prepare) for pytest-harness grading sandboxes: a judge-owned
 * pytest started and imported before any submission exists in the sandbox, waiting for one run (grade.ts adds
 * it to the grading requirement). Never for host stand-ins (sameUidWorker).
 */
export function pytestServerPrepare(opts: RunnerOptions = {}): ExecRequest {
  return {
    // The program on stdin: the server's argv stays short (`python3 -I -B - <dir>`).
    argv: ['sh', '-c', PREPARE_SH, 'sandgym-prepare', pytestServerDir(opts), opts.python ?? 'python3', opts.path ?? DEFAULT_RUNNER_PATH],
    stdin: PYTEST_SERVER_STDIN,
    identity: 'judge',
    timeout_ms: 60_000,
  };
}

function planHarnessGrading(task: LoadedTask, opts: PlanOptions): GradingPlan {
  const nonce = opts.nonce ?? newGradingNonce();
  const layout = harnessLayout(nonce, opts);
  const { testLimitS, runTimeoutMs } = runLimits(task.spec.test.timeout_s, opts.budgetMs);
  const sameUid = opts.sameUidWorker === true;
  const limits = { ...WORKER_DEFAULT_LIMITS, ...(task.spec.limits ?? {}) };
  const config: HarnessConfig = {
    workspace: layout.workspace,
    python: opts.python ?? 'python3',
    path: opts.path ?? DEFAULT_RUNNER_PATH,
    call_timeout_s: task.spec.test.call_timeout_s,
    same_uid: sameUid,
    messages: `${layout.out}/agent.json`,
    tmp: (opts.scratch ?? '/tmp').replace(/\/+$/, ''),
    data_mb: limits.memory_mb,
    nproc: limits.pids,
    nofile: limits.nofile,
    prestart: opts.prestartWorker !== false,
    ...(opts.submission ? { submission: `${layout.root}/submission.json` } : {}),
    exceptions: task.spec.exceptions ?? {},
  };
  // The agent uid comes from the judge's environment at run time, so this line is not fully quoted.
  const uidVar = sameUid ? [] : ['"SANDGYM_AGENT_UID=$SANDGYM_AGENT_UID"'];
  const argv = harnessRunnerArgv(task, layout, opts);
  const direct = `cd ${shellQuote(layout.root)} && exec env -i ${harnessEnv(layout, opts).map(shellQuote).join(' ')} ${uidVar.join(' ')} ${argv.map(shellQuote).join(' ')}\n`;
  const server = !sameUid && opts.prestartServer !== false;
  const runLine = server ? serverRunLine(layout, opts) + direct : direct;
  const request = {
    cwd: layout.root,
    env: Object.fromEntries(harnessEnv(layout, opts).map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)])),
    args: argv.slice(5),
    limit_s: testLimitS,
    agent_uid: !sameUid,
  };
  const preflight = [
    `${['env', '-i', `PATH=${opts.path ?? DEFAULT_RUNNER_PATH}`, opts.python ?? 'python3', '-I', '-B', '-c', PYTEST_PREFLIGHT].map(shellQuote).join(' ')} || exit 1`,
    `[ "$1" = 1 ] || command -v nsenter >/dev/null || { echo 'nsenter is not installed (the harness starts its worker with it)'; exit 1; }`,
    '',
  ].join('\n');
  const changed = (opts.changed ?? []).filter((p) => SYNTAX_EXT.test(p)).map((p) => `${layout.workspace}/${p}`);
  const agentEnv = [`PATH=${opts.path ?? DEFAULT_RUNNER_PATH}`, 'HOME=/tmp', 'LANG=C.UTF-8', 'LC_ALL=C.UTF-8', 'PYTHONDONTWRITEBYTECODE=1'];
  const files: FileEntry[] = [
    ...task.tests.map((f) => ({ path: `${layout.tests}/${f.path}`, content: f.content, mode: 0o444 })),
    { path: `${layout.root}/harness/sandgym_harness.py`, content: HARNESS_PY, mode: 0o444 },
    { path: `${layout.root}/harness/worker.py`, content: HARNESS_WORKER_PY, mode: 0o444 },
    { path: `${layout.root}/conftest.py`, content: HARNESS_CONFTEST, mode: 0o444 },
    { path: layout.ini, content: harnessPytestIni(layout), mode: 0o444 },
    { path: `${layout.root}/harness.json`, content: JSON.stringify(config), mode: 0o444 },
    ...submissionFiles(layout, opts),
    ...(server ? [{ path: `${layout.root}/server-request.json`, content: JSON.stringify(request), mode: 0o444 }] : []),
  ];
  return finishHarnessPlan(task, nonce, layout, opts, files, {
    changed,
    agentEnv: agentEnv.join(' '),
    node: opts.node ?? 'node',
    preflight,
    runLine,
    testLimitS,
    runTimeoutMs,
    sameUid,
  });
}

/** The submission capture as a judge file (0400: only the judge's test processes read it). */
function submissionFiles(layout: GradingLayout, opts: PlanOptions): FileEntry[] {
  return opts.submission ? [{ path: `${layout.root}/submission.json`, content: submissionJson(opts.submission), mode: 0o400 }] : [];
}

/**
 * What both harness formats share after their own files: the syntax check, the values the grade script hands
 * to agent-uid commands as argv (it reads its own files, the agent never does), the scripts, and the run as the
 * judge.
 */
function finishHarnessPlan(
  task: LoadedTask,
  nonce: string,
  layout: GradingLayout,
  opts: PlanOptions,
  own: FileEntry[],
  p: { changed: string[]; agentEnv: string; node: string; preflight: string; runLine: string; testLimitS: number; runTimeoutMs: number; sameUid: boolean },
): GradingPlan {
  const files: FileEntry[] = [
    ...own,
    { path: layout.syntaxScript, content: SYNTAX_CHECK_STDIN_PY, mode: 0o444 },
    { path: layout.syntaxList, content: p.changed.join('\n') + (p.changed.length ? '\n' : ''), mode: 0o444 },
    { path: `${layout.root}/env.txt`, content: p.agentEnv, mode: 0o444 },
    { path: `${layout.root}/python.txt`, content: opts.python ?? 'python3', mode: 0o444 },
    { path: `${layout.root}/node.txt`, content: p.node, mode: 0o444 },
    { path: `${layout.root}/preflight.sh`, content: p.preflight, mode: 0o444 },
    { path: layout.runScript, content: p.runLine, mode: 0o444 },
    { path: layout.gradeScript, content: HARNESS_GRADE_SH, mode: 0o444 },
    { path: `${layout.out}/.keep`, content: '', mode: 0o444 },
    { path: `${layout.home}/.keep`, content: '', mode: 0o444 },
    { path: `${layout.tmp}/.keep`, content: '', mode: 0o444 },
  ];
  const run: ExecRequest = {
    argv: ['sh', layout.gradeScript, layout.root, String(p.testLimitS), p.sameUid ? '1' : '0', opts.preflight === false ? '0' : '1'],
    cwd: layout.root,
    identity: 'judge',
    stdin: `${nonce}\n`,
    timeout_ms: p.runTimeoutMs,
    max_output_bytes: opts.max_output_bytes ?? 16 * 1024 * 1024,
  };
  const testHashes: Record<string, string> = {};
  for (const f of task.tests) testHashes[`./${f.path}`] = f.sha256;
  return { nonce, layout, prepare: null, files, run, testHashes, judge: true };
}

// ---- node-harness ---------------------------------------------------------------------------------------------------
// `node --test` and the hidden tests run AS THE JUDGE in the grading dir; tests import 'sandgym-harness' from
// <root>/node_modules (the judge's, never the workspace's); the harness starts one worker per test file as the agent
// uid (envs/src/code/harness/node). The grade script, syntax check and sweep are the pytest-harness ones.

/** The judge's node --test argv (run from the grading dir, test paths relative to it). */
export function nodeHarnessRunnerArgv(task: LoadedTask, layout: GradingLayout, opts: RunnerOptions = {}): string[] {
  const testPaths = task.tests.filter((f) => /\.test\.[cm]?js$/.test(f.path)).map((f) => `tests/${f.path}`);
  return [
    opts.node ?? 'node',
    '--test',
    ...task.spec.test.command.slice(2),
    `--test-reporter=${layout.reporter}`,
    `--test-reporter-destination=${layout.report}`,
    `--test-reporter=${layout.root}/agent-reporter.mjs`,
    `--test-reporter-destination=${layout.out}/agent.json`,
    ...testPaths,
  ];
}

function planNodeHarnessGrading(task: LoadedTask, opts: PlanOptions): GradingPlan {
  const nonce = opts.nonce ?? newGradingNonce();
  const layout = harnessLayout(nonce, opts);
  const { testLimitS, runTimeoutMs } = runLimits(task.spec.test.timeout_s, opts.budgetMs);
  const sameUid = opts.sameUidWorker === true;
  const limits = { ...WORKER_DEFAULT_LIMITS, ...(task.spec.limits ?? {}) };
  const node = opts.node ?? 'node';
  const path = opts.path ?? DEFAULT_RUNNER_PATH;
  const config = {
    workspace: layout.workspace,
    node,
    path,
    call_timeout_s: task.spec.test.call_timeout_s,
    same_uid: sameUid,
    data_mb: limits.memory_mb,
    nproc: limits.pids,
    nofile: limits.nofile,
    ...(opts.submission ? { submission: `${layout.root}/submission.json` } : {}),
    exceptions: task.spec.exceptions ?? {},
  };
  const env = [
    `PATH=${path}`,
    `HOME=${layout.home}`,
    `TMPDIR=${layout.tmp}`,
    'LANG=C.UTF-8',
    'LC_ALL=C.UTF-8',
    'NODE_OPTIONS=',
    'NO_COLOR=1',
    `SANDGYM_NODE_HARNESS_CONFIG=${layout.root}/node-harness.json`,
  ];
  // The agent uid comes from the judge's environment at run time, so this line is not fully quoted.
  const uidVar = sameUid ? '' : ' "SANDGYM_AGENT_UID=$SANDGYM_AGENT_UID"';
  const runLine = `cd ${shellQuote(layout.root)} && exec env -i ${env.map(shellQuote).join(' ')}${uidVar} ${nodeHarnessRunnerArgv(task, layout, opts).map(shellQuote).join(' ')}\n`;
  const preflight = [
    `${['env', '-i', `PATH=${path}`, node, '-e', NODE_PREFLIGHT].map(shellQuote).join(' ')} || exit 1`,
    `[ "$1" = 1 ] || for c in nsenter prlimit choom setpriv; do command -v $c >/dev/null || { echo "$c is not installed (the node harness starts its worker and file reader with it)"; exit 1; }; done`,
    '',
  ].join('\n');
  const changed = (opts.changed ?? []).filter((p) => SYNTAX_EXT.test(p)).map((p) => `${layout.workspace}/${p}`);
  const pkg = `${layout.root}/node_modules/sandgym-harness`;
  const files: FileEntry[] = [
    ...task.tests.map((f) => ({ path: `${layout.tests}/${f.path}`, content: f.content, mode: 0o444 })),
    ...Object.entries(NODE_HARNESS_FILES).map(([name, content]) => ({ path: `${pkg}/${name}`, content, mode: 0o444 })),
    { path: `${pkg}/package.json`, content: NODE_HARNESS_PACKAGE, mode: 0o444 },
    { path: layout.reporter, content: NODE_JUNIT_REPORTER, mode: 0o444 },
    { path: `${layout.root}/agent-reporter.mjs`, content: NODE_HARNESS_FILES['agent-reporter.mjs'], mode: 0o444 },
    { path: `${layout.root}/node-harness.json`, content: JSON.stringify(config), mode: 0o444 },
    ...submissionFiles(layout, opts),
  ];
  const agentEnv = [`PATH=${path}`, 'HOME=/tmp', 'LANG=C.UTF-8', 'LC_ALL=C.UTF-8', 'PYTHONDONTWRITEBYTECODE=1'].join(' ');
  return finishHarnessPlan(task, nonce, layout, opts, files, { changed, agentEnv, node, preflight, runLine, testLimitS, runTimeoutMs, sameUid });
}

/**
 * Identifies the judge: bumped by hand when grading semantics change, plus a digest of every script and
 * harness file the grader ships, so rewards of different judges never look alike (info.grade.grader.version).
 */
export const GRADER_VERSION = `3+${createHash('sha256')
  .update(
    [
      HARNESS_PY,
      HARNESS_WORKER_PY,
      PYTEST_SERVER_PY,
      PREPARE_SH,
      serverRunLine(harnessLayout('0'.repeat(32)), {}),
      // The judge's pytest options (a task's own options and test paths aside) and its ini decide verdicts too.
      harnessRunnerArgv({ tests: [], spec: { test: { command: ['python3', '-m', 'pytest'] } } } as unknown as LoadedTask, harnessLayout('0'.repeat(32))).join(
        ' ',
      ),
      harnessPytestIni(harnessLayout('0'.repeat(32))),
      HARNESS_CONFTEST,
      HARNESS_GRADE_SH,
      GRADE_SH,
      NODE_JUNIT_REPORTER,
      ...Object.values(NODE_HARNESS_FILES),
    ].join('\u0000'),
  )
  .digest('hex')
  .slice(0, 12)}`;
