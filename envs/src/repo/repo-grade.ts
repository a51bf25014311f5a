// Grading a repository task (issue 32 item 3; docs/TASKS.md, "Repository tasks: grading"). The agent's change is the
// SOURCE part of its workspace capture (envs/src/workspace/capture.ts, read as the agent): tests and every
// test-support file (conftest.py, pytest/tox/setup/pyproject configuration, anything under a test folder) come from
// the judge's pristine copy whatever the agent did to them, and files Python or pytest would run on their own
// (sitecustomize, .pth, bytecode, history, installed copies) are never taken at all. The judge composes the grading
// tree itself (base state + the agent's source changes + the hidden tests of test_patch + canaries), unpacks it as
// the judge (read-only to the agent uid) in a FRESH grading sandbox, and runs the repository's pytest AS THE AGENT
// UID with the judge's runner (sandgym_repo_runner.py). The verdict is the judge's reading of the runner's per-test
// report, accepted only when it carries the run's token and the three canaries came out as they must
// and no FAIL_TO_PASS or PASS_TO_PASS test met a lying object (the runner's runtime check, sandgym_repo_runner.py).
//
// Isolation: "in-process" (the repository's tests import the agent's code into the test process): what that means
// and does not is in docs/TASKS.md. Fail closed: no report, a wrong token, a canary wrong, a timeout, the memory
// limit: 0 with a zero_reason. Infrastructure (the image lacks pytest or nsenter): SandboxFailure.
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { SandboxFailure } from '../api.js';
import { JUDGE_WORKDIR } from '../../../sandbox-contract/index.js';
import type { Sandbox } from '../sandbox-api.js';
import type { GradeResult } from '../code/grade.js';
import { GRADER_VERSION, newGradingNonce, parseRunOutput, runLimits, DEFAULT_RUNNER_PATH } from '../code/grader-plan.js';
import { combine, GradeCache } from '../code/rubric.js';
import { sha256Hex } from '../code/task-hash.js';
import type { LoadedTask } from '../code/task-types.js';
import { CaptureRefused, captureHash, parseCapture, type CapturedWorkspace, type WorkspaceCapture } from '../workspace/capture.js';
import { GO_GRADE_SH, KILL_AGENT_SH } from './go-grade-sh.js';
import { gradeGoTree } from './repo-grade-go.js';
import { gradingTreeTar, MAX_LISTED, repoReward, type RepoGradeOptions, type TreeFile } from './repo-grade-common.js';
import { REPO_JUDGE_SITE_DIR, REPO_SITE_DIR } from './repo-environment.js';
import { pathRole } from './repo-task.js';
import { REPO_ISOLATION } from './repo-types.js';

export { REPO_ISOLATION, type RepoGradeInfo } from './repo-types.js';
export { gradingTreeTar, repoReward, type RepoGradeOptions } from './repo-grade-common.js';

export const REPO_RUNNER_PY = readFileSync(new URL('./sandgym_repo_runner.py', import.meta.url), 'utf8');
/** The judge's static always-equal check (sandgym_eq_scan.py), run as the judge before any submitted code. */
export const REPO_EQ_SCAN_PY = readFileSync(new URL('./sandgym_eq_scan.py', import.meta.url), 'utf8');

export type RepoSubmission = Uint8Array | CapturedWorkspace | CaptureRefused;

/** The grading tree: base state, the agent's source changes, the hidden tests, test_patch's deletions. */
export function composeGradingTree(
  task: LoadedTask,
  capture: WorkspaceCapture,
): { files: Map<string, TreeFile>; changed: string[]; ignored: string[] } | { refused: string } {
  const repo = task.repo;
  if (!repo) throw new Error(`${task.spec.id} is not a repository task`);
  const hidden = new Set(task.tests.map((f) => f.path));
  const base = new Map(task.workspace.map((f) => [f.path, f]));
  const files = new Map<string, TreeFile>();
  for (const f of task.workspace) files.set(f.path, { content: f.content, mode: f.mode });
  const changed: string[] = [];
  const ignored: string[] = [];
  const seen = new Set<string>();
  for (const e of capture.entries) {
    if (e.type === 'directory') continue;
    seen.add(e.path);
    const role = pathRole(e.path, hidden, repo.language);
    const b = base.get(e.path);
    if (e.type === 'symlink') {
      if (role !== 'source') ignored.push(e.path);
      else return { refused: `workspace path ${e.path} is a symlink: a repository submission's source files are graded as regular files only` };
      continue;
    }
    const mode = e.mode & 0o100 ? 0o755 : 0o644;
    const same = b !== undefined && b.sha256 === sha256Hex(e.content) && b.mode === mode;
    if (same) continue;
    if (role !== 'source') {
      ignored.push(e.path);
      continue;
    }
    changed.push(e.path);
    files.set(e.path, { content: e.content, mode });
  }
  // Source files the agent deleted are deleted; tests and support files it deleted are the judge's again.
  for (const f of task.workspace) {
    if (seen.has(f.path) || pathRole(f.path, hidden, repo.language) !== 'source') continue;
    files.delete(f.path);
    changed.push(f.path);
  }
  for (const p of repo.deleted_tests) files.delete(p);
  for (const t of task.tests) files.set(t.path, { content: t.content, mode: 0o644 });
  // A source file where the tree needs a directory (or the reverse) cannot be laid out: the agent's, refused.
  for (const p of files.keys()) {
    const segs = p.split('/');
    for (let i = 1; i < segs.length; i++) {
      const parent = segs.slice(0, i).join('/');
      if (files.has(parent)) return { refused: `workspace path ${parent} is a file, but the grading tree needs it to be a directory (${p})` };
    }
  }
  return { files, changed: changed.sort(), ignored: ignored.sort() };
}

/**
 * Run as the judge (cwd the judge's grading dir; the frame nonce on stdin). $1 judge dir, $2 test limit (s), $3 the
 * grading tree's directory (created here, by the judge: read-only to the agent uid), $4 the agent's scratch directory
 * (created as the agent), $5 PATH, $6 python, then the directories the runner puts first on sys.path (the judge's own
 * pytest in a prebuilt image's derived image): the preflight imports pytest from them too. Every agent-uid process dies
 * before the report is read.
 */
export const REPO_GRADE_SH = `set -u
${KILL_AGENT_SH}
IFS= read -r nonce || exit 97
jroot=$1; limit=$2; tree=$3; scratch=$4; run_path=$5; py=$6
shift 6
frame() { printf '\\n%s:%s\\n' "$nonce" "$1"; }
infra() { frame preflight:failed; frame log:begin; printf '%s' "$1" | base64 | tr -d '\\n'; frame log:end; frame done; exit 0; }
case "\${SANDGYM_AGENT_UID:-}" in ''|0|*[!0-9]*) infra 'no agent uid (SANDGYM_AGENT_UID) in the judge environment';; esac
U=$SANDGYM_AGENT_UID
for c in nsenter timeout tar base64; do command -v "$c" >/dev/null 2>&1 || infra "$c is not installed in the grading image"; done
env -i "PATH=$run_path" "$py" -I -B -c 'import sys; sys.path[:0] = sys.argv[1:]; import pytest' "$@" >/dev/null 2>&1 || infra "$py -m pytest is not available in the grading image"
umask 022
mkdir "$tree" || infra "cannot create the grading tree $tree"
tar -xf "$jroot/tree.tar" -C "$tree" --no-same-owner 2>"$jroot/out/tar.log" || infra "cannot unpack the grading tree: $(head -c 300 "$jroot/out/tar.log")"
nsenter -S "$U" -G "$U" -- mkdir -m 700 "$scratch" || infra "cannot create the agent's scratch directory"
# Before any submitted code runs, as the judge, on the judge's own read-only copy: always-equal comparison methods.
env -i "PATH=$run_path" "$py" -I -B -S "$jroot/eq_scan.py" <"$jroot/eq_scan.json" >"$jroot/out/eq_scan.out" 2>/dev/null
frame eqscan:begin
head -c 65536 "$jroot/out/eq_scan.out" | base64 -w 0
frame eqscan:end
cd "$tree/repo" || infra 'grading tree has no repo/'
# RLIMIT_FSIZE (512-byte blocks: 64 MiB): a run that floods the report or its log is killed (SIGXFSZ), not the sandbox.
(ulimit -f 131072 && exec timeout -k 5 "$limit" nsenter -S "$U" -G "$U" -- env -i "PATH=$run_path" "HOME=$scratch" "TMPDIR=$scratch" LANG=C.UTF-8 LC_ALL=C.UTF-8 PYTHONDONTWRITEBYTECODE=1 PYTHONNOUSERSITE=1 PYTHONHASHSEED=0 PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 PYTEST_ADDOPTS= NO_COLOR=1 "$py" -I -B "$tree/runner/sandgym_repo_runner.py" <"$jroot/runner-stdin.json" 3>"$jroot/out/report.json" >"$jroot/out/runner.log" 2>&1)
status=$?
# Nothing of the agent outlives the run: a process left behind holding fd 3 could rewrite the report.
killagent
frame "status:$status"
if [ -s "$jroot/out/report.json" ]; then
  frame report:begin
  head -c 8388608 "$jroot/out/report.json" | base64 -w 0
  frame report:end
fi
frame log:begin
tail -c 4000 "$jroot/out/runner.log" | base64 -w 0
frame log:end
frame done
`;

/**
 * Identifies the repository judge: the function-task judge's version (GRADER_VERSION, unchanged by this kind) plus a
 * digest of everything that decides a repository verdict here (the runner, the always-equal scan, the grade script).
 */
export const REPO_GRADER_VERSION = `${GRADER_VERSION}+repo1.${createHash('sha256').update([REPO_RUNNER_PY, REPO_EQ_SCAN_PY, REPO_GRADE_SH, GO_GRADE_SH].join('\u0000')).digest('hex').slice(0, 12)}`;

const hex = () => randomBytes(8).toString('hex');

interface RunnerReport {
  token: string;
  status: number | null;
  tests: Record<string, string>;
  /** Tests the runner's lying-object check failed, with why (sandgym_repo_runner.py, _sg_build). */
  lying: Record<string, string>;
}

function parseReport(raw: Uint8Array | null, token: string): RunnerReport | string {
  if (!raw || raw.byteLength === 0) return 'the test run wrote no report (the process exited or was killed before pytest finished)';
  let doc: unknown;
  try {
    doc = JSON.parse(Buffer.from(raw).toString('utf8'));
  } catch {
    return 'the test run report is not valid JSON (written twice or forged)';
  }
  const d = doc as Partial<RunnerReport> | null;
  if (d === null || typeof d !== 'object' || typeof d.tests !== 'object' || d.tests === null) return 'the test run report has no per-test results';
  if (d.token !== token) return 'the test run report does not carry the run token (forged or written by another process)';
  for (const v of Object.values(d.tests)) if (typeof v !== 'string') return 'the test run report has a malformed outcome';
  const lying = d.lying ?? {};
  if (typeof lying !== 'object' || lying === null || Object.values(lying).some((v) => typeof v !== 'string'))
    return 'the test run report has a malformed lying-object list';
  return { token, status: typeof d.status === 'number' ? d.status : null, tests: d.tests as Record<string, string>, lying: lying as Record<string, string> };
}

/** The judge's always-equal findings from its own frame; null when the scan did not produce a result. */
function eqFindings(stdout: string, nonce: string): string[] | null {
  const m = new RegExp(`\\n${nonce}:eqscan:begin\\n([A-Za-z0-9+/=]*)\\n${nonce}:eqscan:end\\n`).exec(stdout);
  if (!m) return null;
  try {
    const doc = JSON.parse(Buffer.from(m[1] ?? '', 'base64').toString('utf8')) as { findings?: unknown };
    return Array.isArray(doc.findings) ? doc.findings.map(String) : null;
  } catch {
    return null;
  }
}

/**
 * Published SWE-bench lists cut test ids at their first space (the harness splits log lines on whitespace):
 * "test_x.py::test_msg[required-Missing" stands for "test_x.py::test_msg[required-Missing data for required field.]".
 * Such an id is matched against the real node ids it is a cut of; it passes only if every one of them passed.
 */
export function spaceCutIndex(tests: Record<string, string>): Map<string, string[]> {
  const index = new Map<string, string[]>();
  for (const id of Object.keys(tests)) {
    const sp = id.indexOf(' ');
    if (sp < 0) continue;
    const key = id.slice(0, sp);
    index.set(key, [...(index.get(key) ?? []), id]);
  }
  return index;
}

export function outcomeOf(tests: Record<string, string>, cut: Map<string, string[]>, id: string): string {
  const exact = tests[id];
  if (exact !== undefined) return exact;
  const full = cut.get(id);
  if (!full) return 'missing';
  return full.map((f) => tests[f] ?? 'missing').find((o) => o !== 'passed') ?? 'passed';
}

/** Grades one submission of a repository task. Throws SandboxFailure only on an infrastructure fault. */
export async function gradeRepoSubmission(task: LoadedTask, submission: RepoSubmission, opts: RepoGradeOptions): Promise<GradeResult> {
  const t0 = performance.now();
  const repo = task.repo;
  if (!repo) throw new Error(`${task.spec.id} is not a repository task`);
  const weights = { tests: 1 };
  const base = { task_id: task.spec.id, dropped: [], restored: [], changed: [] as string[], tamper: [], cached: false };
  let capture: WorkspaceCapture;
  try {
    if (submission instanceof CaptureRefused) throw submission;
    capture = submission instanceof Uint8Array ? await parseCapture(submission) : submission.capture;
  } catch (err) {
    if (!(err instanceof CaptureRefused)) throw err;
    const ms = performance.now() - t0;
    return { ...base, score: combine({}, weights, err.message), workspace_hash: '', timings_ms: { filter: ms, acquire: 0, run: 0, total: ms } };
  }
  const hash = captureHash(capture);
  const key = GradeCache.key(task.spec.id, hash);
  const hit = opts.cache?.get(key);
  if (hit) return { ...hit, cached: true };
  const tree = composeGradingTree(task, capture);
  const filterMs = performance.now() - t0;
  const empty = (total: number) => ({ passed: 0, total, failed: [] as string[] });
  if ('refused' in tree) {
    const result: GradeResult = {
      ...base,
      workspace_hash: hash,
      score: combine({}, weights, tree.refused),
      timings_ms: { filter: filterMs, acquire: 0, run: 0, total: filterMs },
      repo: {
        isolation: REPO_ISOLATION,
        fail_to_pass: empty(repo.fail_to_pass.length),
        pass_to_pass: empty(repo.pass_to_pass.length),
        ignored: [],
        report: 'not run',
        outcomes: {},
      },
    };
    opts.cache?.set(key, result);
    return result;
  }
  if (repo.language === 'go') {
    const result = await gradeGoTree(task, tree, { ...opts, t0, filterMs, hash });
    opts.cache?.set(key, result);
    return result;
  }
  const rnd = opts.random ?? hex;
  const token = `${rnd()}${rnd()}`;
  const canaryFile = `test_${rnd()}.py`;
  const mustFail = `test_${rnd()}`;
  const mustPass = `test_${rnd()}`;
  const mustLie = `test_${rnd()}`;
  // Canaries: the first must fail (an object is never equal to a fresh object()), the second must pass. A runner
  // patched to report passes (or to drop failures) gets the first wrong; a run that never ran tests gets the second.
  // The third compares a lying object made the way a submission would (code compiled outside any trusted file, nested
  // in a list): it passes unless the runner's lying-object check is on, so it must fail AND be in the report's
  // "lying". The second also holds what the check must let through: unittest.mock.ANY and pytest.approx on the
  // expected side, a mock compared with its calls (a probe of a mock would add calls to it).
  const canary = [
    'import pytest',
    'from unittest.mock import ANY, MagicMock, call',
    '',
    '',
    `def ${mustFail}():`,
    '    expected = object()',
    '    assert expected == object()',
    '',
    '',
    `def ${mustPass}():`,
    '    assert [1, 2] == [1, 2]',
    '    assert {"a": 1, "b": object()} == {"a": 1, "b": ANY}',
    '    assert 0.1 + 0.2 == pytest.approx(0.3)',
    '    m = MagicMock()',
    '    m(1)',
    '    assert m.mock_calls == [call(1)]',
    '',
    '',
    `def ${mustLie}():`,
    '    ns = {}',
    `    exec(compile("class V:\\n    def __eq__(self, other):\\n        return other is other\\n", "<${rnd()}>", "exec"), ns)`,
    '    assert [ns["V"]()] == [3]',
    '',
  ].join('\n');
  tree.files.set(canaryFile, { content: new TextEncoder().encode(canary), mode: 0o644 });
  const canaryFail = `${canaryFile}::${mustFail}`;
  const canaryPass = `${canaryFile}::${mustPass}`;
  const canaryLie = `${canaryFile}::${mustLie}`;
  const nonce = newGradingNonce();
  const jroot = `${JUDGE_WORKDIR}/repo-${nonce}`;
  const treeDir = `/tmp/sandgym-repo-${rnd()}`;
  const scratch = `/tmp/sandgym-run-${rnd()}`;
  const env = repo.environment;
  const testFiles = [...new Set([...repo.fail_to_pass, ...repo.pass_to_pass].map((id) => id.slice(0, id.indexOf('::'))))].sort();
  const args = [
    `--rootdir=${treeDir}/repo`,
    `--confcutdir=${treeDir}/repo`,
    '-p',
    'no:cacheprovider',
    `--basetemp=${scratch}/pytest`,
    '-q',
    '--tb=short',
    ...env.pytest_plugins.flatMap((m) => ['-p', m]),
    ...env.pytest_args,
    ...testFiles,
    canaryFile,
  ];
  // A prebuilt image's tasks import the judge's own pytest (copied into the derived image), never the image's copy.
  const site = env.image !== undefined ? [REPO_JUDGE_SITE_DIR] : env.requirements.length ? [REPO_SITE_DIR] : [];
  // `changed`: the files whose code the lying-object check does not trust (the submission's); the rest of the tree is
  // the judge's.
  const runnerCfg = { token, root: `${treeDir}/repo`, python_path: env.python_path, site, changed: tree.changed, args };
  const tar = await gradingTreeTar(tree.files, [
    { path: 'runner/sandgym_repo_runner.py', content: REPO_RUNNER_PY },
    // Stops pytest's search for a configuration file at the tree: nothing above it (the image's /tmp, /) is read.
    { path: 'pytest.ini', content: '[pytest]\n' },
  ]);
  // The always-equal scan's input: each changed .py file of the tree, with the base version (a judge file) beside it.
  const baseByPath = new Map(task.workspace.map((f) => [f.path, f]));
  const scanBase: { path: string; content: Uint8Array; mode: number }[] = [];
  const scanList = tree.changed
    .filter((p) => p.endsWith('.py') && tree.files.has(p))
    .map((p, i) => {
      const b = baseByPath.get(p);
      if (b) scanBase.push({ path: `${jroot}/base/${i}.py`, content: b.content, mode: 0o400 });
      return [`${treeDir}/repo/${p}`, b ? `${jroot}/base/${i}.py` : null, p];
    });
  const { testLimitS, runTimeoutMs } = runLimits(repo.timeout_s, opts.budgetMs);
  const ta = performance.now();
  const sb: Sandbox = await opts.provider.acquire(opts.requirement);
  const acquireMs = performance.now() - ta;
  const imageId = sb.image_id ?? null;
  if (imageId === null) {
    await opts.provider.release(sb);
    throw new SandboxFailure(`grading ${task.spec.id} needs its environment image (${opts.requirement.image}); this sandbox runs none (bubblewrap)`);
  }
  let out: ReturnType<typeof parseRunOutput>;
  let oomKilled = false;
  let timedOut = false;
  let res: Awaited<ReturnType<Sandbox['exec']>>;
  const tr = performance.now();
  try {
    await sb.putFiles(
      [
        { path: `${jroot}/tree.tar`, content: tar, mode: 0o400 },
        { path: `${jroot}/runner-stdin.json`, content: `${JSON.stringify(runnerCfg)}\n`, mode: 0o400 },
        { path: `${jroot}/grade.sh`, content: REPO_GRADE_SH, mode: 0o400 },
        { path: `${jroot}/eq_scan.py`, content: REPO_EQ_SCAN_PY, mode: 0o400 },
        { path: `${jroot}/eq_scan.json`, content: JSON.stringify(scanList), mode: 0o400 },
        ...scanBase,
        { path: `${jroot}/out/.keep`, content: '', mode: 0o400 },
      ],
      { identity: 'judge' },
    );
    res = await sb.exec({
      argv: ['sh', `${jroot}/grade.sh`, jroot, String(testLimitS), treeDir, scratch, opts.path ?? DEFAULT_RUNNER_PATH, opts.python ?? 'python3', ...site],
      cwd: jroot,
      identity: 'judge',
      stdin: `${nonce}\n`,
      timeout_ms: runTimeoutMs,
      max_output_bytes: 16 * 1024 * 1024,
    });
    oomKilled = res.oom_killed;
    timedOut = res.timed_out;
    out = parseRunOutput(res.stdout, nonce);
    if (out.preflight_failed)
      throw new SandboxFailure(`grading image ${opts.requirement.image} cannot run repository tests: ${out.log_tail.trim().slice(-500)}`);
    if (!out.complete && !timedOut && !oomKilled) {
      throw new SandboxFailure(`repository grading did not complete (exit ${String(res.exit_code)}): ${res.stderr.slice(0, 500)}`);
    }
  } finally {
    await opts.provider.release(sb);
  }
  const runMs = performance.now() - tr;

  const outcomes: Record<string, string> = {};
  let reportState = 'ok';
  let zero: string | undefined;
  const parsed = parseReport(out.report, token);
  const eq = eqFindings(res.stdout, nonce);
  if (eq === null) zero = 'the always-equal check did not run to completion on the submitted files';
  else if (eq.length > 0) zero = `always-equal comparison suspected (a method that never looks at what it is compared with): ${eq.slice(0, 3).join('; ')}`;
  else if (oomKilled) zero = 'memory limit exceeded';
  else if (timedOut || out.status === 124 || out.status === 137) zero = `tests timed out after ${testLimitS}s`;
  else if (typeof parsed === 'string') zero = parsed;
  else {
    const cf = parsed.tests[canaryFail] ?? 'missing';
    const cp = parsed.tests[canaryPass] ?? 'missing';
    if (cf === 'missing' && cp === 'missing')
      zero = "the test run ended before the judge's canary tests ran (an exit or an interruption during collection): no verdict can be trusted";
    else if (cf !== 'failed' || cp !== 'passed')
      zero = `judge canary tests came out wrong (must-fail: ${cf}, must-pass: ${cp}): the test run's report cannot be trusted (runner patched or report forged)`;
    else if ((parsed.tests[canaryLie] ?? 'missing') !== 'failed' || parsed.lying[canaryLie] === undefined)
      zero = `the judge's lying-object canary came out wrong (${parsed.tests[canaryLie] ?? 'missing'}, ${parsed.lying[canaryLie] === undefined ? 'not flagged' : 'flagged'}): the lying-object check was disabled or bypassed`;
    else {
      // A test id cut at its first space (spaceCutIndex) lied when any test it stands for did.
      const cutIds = spaceCutIndex(parsed.lying);
      const why = (id: string) => parsed.lying[id] ?? (cutIds.get(id) ?? []).map((f) => parsed.lying[f]).find((r) => r !== undefined);
      const lied = [...repo.fail_to_pass, ...repo.pass_to_pass].filter((id) => why(id) !== undefined);
      if (lied.length > 0)
        zero = `lying object in a comparison of ${lied.length === 1 ? 'test' : `${lied.length} tests, first`} ${lied[0]}: ${why(lied[0] as string)}`;
    }
  }
  if (zero !== undefined && typeof parsed !== 'string') reportState = zero;
  if (typeof parsed === 'string') reportState = parsed;
  const tests = typeof parsed === 'string' ? {} : parsed.tests;
  const cut = spaceCutIndex(tests);
  for (const id of [...repo.fail_to_pass, ...repo.pass_to_pass]) outcomes[id] = outcomeOf(tests, cut, id);
  const f2pFailed = repo.fail_to_pass.filter((id) => outcomes[id] !== 'passed');
  const p2pFailed = repo.pass_to_pass.filter((id) => outcomes[id] !== 'passed');
  let value = 0;
  if (zero === undefined) ({ value, zero } = repoReward(repo, outcomes));
  const trusted = reportState === 'ok';
  // At most MAX_LISTED ids per list in info (a repository may have thousands of PASS_TO_PASS tests).
  const count = (ids: string[], failed: string[]) => ({
    passed: trusted ? ids.length - failed.length : 0,
    total: ids.length,
    failed: (trusted ? failed : ids).slice(0, MAX_LISTED),
  });
  const all = [...repo.fail_to_pass, ...repo.pass_to_pass];
  const passed = trusted ? all.filter((id) => outcomes[id] === 'passed').length : 0;
  const result: GradeResult = {
    ...base,
    changed: tree.changed,
    workspace_hash: hash,
    image_id: imageId,
    score: zero !== undefined ? combine({}, weights, zero) : combine({ tests: value }, weights),
    tests: {
      collected: all.length,
      passed,
      failed: all.length - passed,
      errors: trusted ? all.filter((id) => outcomes[id] === 'error').length : 0,
      skipped: trusted ? all.filter((id) => outcomes[id] === 'skipped').length : 0,
    },
    timings_ms: { filter: filterMs, acquire: acquireMs, run: runMs, total: performance.now() - t0 },
    log_tail: out.log_tail,
    // What the agent may see: test ids (the repository's own, public) and outcomes, never the hidden tests' text.
    failures: (trusted ? [...p2pFailed, ...f2pFailed] : []).slice(0, 50).map((id) => ({ test: id, message: outcomes[id] ?? 'failed' })),
    repo: {
      isolation: REPO_ISOLATION,
      fail_to_pass: count(repo.fail_to_pass, f2pFailed),
      pass_to_pass: count(repo.pass_to_pass, p2pFailed),
      ignored: tree.ignored,
      report: reportState,
      outcomes: trusted ? outcomes : {},
    },
  };
  opts.cache?.set(key, result);
  return result;
}
