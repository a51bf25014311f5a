// Grading a Go repository task (docs/TASKS.md, "Go repository tasks"). The grading tree is composed as for Python
// (repo-grade.ts composeGradingTree: every _test.go, testdata/, go.mod and go.sum the judge's; go.work, vendor/ and
// prebuilt objects never taken); here the judge adds one canary file per test package, compiles each package's test
// binary AS THE JUDGE (compiling runs no submitted code), runs it AS THE AGENT UID with -test.v=test2json into a pipe
// only the judge reads, and reads the verdict from the toolchain's test2json over that transcript.
//
// Isolation "in-process": the submitted code runs in the test binary and can write anything to its stdout. What the
// judge still checks, so that forging needs a targeted attack (docs/TASKS.md says what is and is not stopped):
//  - every test reports exactly one result: a printed "--- PASS: TestX" (with or without test2json's ^V marker) for a
//    test that also ran is a second result and voids the run; unmarked lines and printed JSON are output, not events;
//  - two canary tests with unguessable names in a judge file the agent uid cannot read: one must fail, one must pass
//    and log the run's token; they run after the repository's tests (a run that stops early loses them);
//  - the binary must exit 1 (the must-fail canary fails every genuine run): an exit 0 is an os.Exit forgery;
//  - build failure, timeout, output flood: 0 with a reason.
import { randomBytes } from 'node:crypto';
import { SandboxFailure } from '../api.js';
import { JUDGE_WORKDIR } from '../../../sandbox-contract/index.js';
import type { Sandbox } from '../sandbox-api.js';
import type { GradeResult } from '../code/grade.js';
import { newGradingNonce, parseRunOutput, runLimits } from '../code/grader-plan.js';
import { combine } from '../code/rubric.js';
import type { LoadedTask } from '../code/task-types.js';
import { GO_GRADE_SH } from './go-grade-sh.js';
import { gradingTreeTar, MAX_LISTED, repoReward, type RepoGradeOptions, type TreeFile } from './repo-grade-common.js';
import { goPackageDir } from './repo-task.js';
import { REPO_ISOLATION } from './repo-types.js';

const letters = (n: number) => [...randomBytes(n)].map((b) => 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'[b % 52]).join('');

/** The package clause of a Go file (after comments and build constraints), or null. */
export function goPackageClause(src: string): string | null {
  const m = /^\s*package\s+([A-Za-z_][A-Za-z0-9_]*)/m.exec(src.replace(/\/\*[\s\S]*?\*\//g, ''));
  return m ? (m[1] as string) : null;
}

interface GoEvent {
  Action?: string;
  Test?: string;
  Output?: string;
}

export interface GoRunReading {
  outcomes: Record<string, string>;
  /** Why the transcript is not trusted (a test reported twice, a canary wrong, a forged exit), or null. */
  untrusted: string | null;
}

/**
 * Reads one package's test2json events: per-test outcome (exactly one result per test, else the run is void), and the
 * canaries (must-fail failed, must-pass passed and logged the token), and the binary's exit status (1: the must-fail
 * canary failed, as it always does).
 */
export function readGoRun(eventsText: string, status: string, canary: { mustFail: string; mustPass: string; token: string }, pkg: string): GoRunReading {
  const results = new Map<string, string[]>();
  let passOutput = '';
  for (const line of eventsText.split('\n')) {
    if (!line.startsWith('{')) continue;
    let e: GoEvent;
    try {
      e = JSON.parse(line) as GoEvent;
    } catch {
      continue;
    }
    if (!e.Test) continue;
    if (e.Action === 'pass' || e.Action === 'fail' || e.Action === 'skip') results.set(e.Test, [...(results.get(e.Test) ?? []), e.Action]);
    if (e.Action === 'output' && e.Test === canary.mustPass) passOutput += e.Output ?? '';
  }
  const outcomes: Record<string, string> = {};
  for (const [t, rs] of results)
    outcomes[`${pkg}::${t}`] = rs.length > 1 ? 'duplicated' : rs[0] === 'pass' ? 'passed' : rs[0] === 'fail' ? 'failed' : 'skipped';
  const dup = [...results.entries()].filter(([, rs]) => rs.length > 1).map(([t]) => t);
  if (dup.length) return { outcomes, untrusted: `test results reported more than once (printed result lines): ${dup.slice(0, 3).join(', ')}` };
  const cf = results.get(canary.mustFail)?.[0];
  const cp = results.get(canary.mustPass)?.[0];
  if (cf === undefined && cp === undefined)
    return {
      outcomes,
      untrusted: `the test binary of ${pkg} ended before the judge's canary tests ran (an exit, a crash or a timeout): no verdict can be trusted`,
    };
  if (cf !== 'fail' || cp !== 'pass')
    return {
      outcomes,
      untrusted: `judge canary tests came out wrong in ${pkg} (must-fail: ${cf ?? 'missing'}, must-pass: ${cp ?? 'missing'}): the test output cannot be trusted`,
    };
  if (!passOutput.includes(canary.token)) return { outcomes, untrusted: `the must-pass canary of ${pkg} did not log the run token: the test output is forged` };
  if (status !== '1')
    return {
      outcomes,
      untrusted: `the test binary of ${pkg} exited ${status} although the judge's must-fail canary failed (a genuine run exits 1): exit status forged`,
    };
  return { outcomes, untrusted: null };
}

const EMBED = /^\s*\/\/go:embed\s/gm;

/**
 * Source files whose `//go:embed` directives the submission added. Compiling (as the judge) reads what they name, and a
 * pattern can name the judge's canary file (`*_test.go`): its test names and token would be compiled into the agent's
 * code. A fix has no need for new embedded files, so such a submission scores 0 (the base's own directives stay).
 */
export function addedEmbeds(task: LoadedTask, tree: { files: Map<string, TreeFile>; changed: string[] }): string[] {
  const base = new Map(task.workspace.map((f) => [f.path, Buffer.from(f.content).toString('utf8')]));
  return tree.changed.filter((p) => {
    const f = tree.files.get(p);
    if (!f || !p.endsWith('.go')) return false;
    const now = (Buffer.from(f.content).toString('utf8').match(EMBED) ?? []).length;
    return now > ((base.get(p) ?? '').match(EMBED) ?? []).length;
  });
}

function section(stdout: string, nonce: string, name: string): string | null {
  const m = new RegExp(`\\n${nonce}:${name}:begin\\n([A-Za-z0-9+/=]*)\\n${nonce}:${name}:end\\n`).exec(stdout);
  return m ? Buffer.from(m[1] ?? '', 'base64').toString('utf8') : null;
}

export async function gradeGoTree(
  task: LoadedTask,
  tree: { files: Map<string, TreeFile>; changed: string[]; ignored: string[] },
  opts: RepoGradeOptions & { t0: number; filterMs: number; hash: string },
): Promise<GradeResult> {
  const repo = task.repo;
  if (!repo?.go_module) throw new Error(`${task.spec.id} is not a Go repository task`);
  const module = repo.go_module;
  const weights = { tests: 1 };
  const base = { task_id: task.spec.id, dropped: [], restored: [], tamper: [], cached: false };
  const all = [...repo.fail_to_pass, ...repo.pass_to_pass];
  const embeds = addedEmbeds(task, tree);
  if (embeds.length > 0) {
    const ms = performance.now() - opts.t0;
    const why = `the submission adds //go:embed directives (${embeds.slice(0, 3).join(', ')}): embedded files are read by the judge's compile step, so they are not accepted`;
    const none = (ids: string[]) => ({ passed: 0, total: ids.length, failed: ids.slice(0, MAX_LISTED) });
    return {
      ...base,
      changed: tree.changed,
      workspace_hash: opts.hash,
      score: combine({}, weights, why),
      timings_ms: { filter: opts.filterMs, acquire: 0, run: 0, total: ms },
      repo: {
        isolation: REPO_ISOLATION,
        fail_to_pass: none(repo.fail_to_pass),
        pass_to_pass: none(repo.pass_to_pass),
        ignored: tree.ignored,
        report: 'not run',
        outcomes: {},
      },
    };
  }
  // One test binary per package the ids name; only the listed top-level tests (and the canaries) run.
  const pkgs = new Map<string, { dir: string; tests: Set<string> }>();
  for (const id of all) {
    const pkg = id.slice(0, id.indexOf('::'));
    const dir = goPackageDir(id, module) as string;
    const top = (id.slice(id.indexOf('::') + 2).split('/')[0] ?? '').trim();
    const p = pkgs.get(pkg) ?? { dir, tests: new Set<string>() };
    p.tests.add(top);
    pkgs.set(pkg, p);
  }
  const token = randomBytes(16).toString('hex');
  const canaries = new Map<string, { mustFail: string; mustPass: string; token: string }>();
  const lines: string[] = [];
  let idx = 0;
  for (const [pkg, p] of [...pkgs.entries()].sort()) {
    const prefix = p.dir === '.' ? '' : `${p.dir}/`;
    // The canary file's package clause is that of the judge's own test files of the directory (internal or _test).
    const testFile = [...tree.files.entries()].find(([f]) => f.startsWith(prefix) && !f.slice(prefix.length).includes('/') && f.endsWith('_test.go'));
    const clause = testFile ? goPackageClause(Buffer.from(testFile[1].content).toString('utf8')) : null;
    if (!clause) throw new SandboxFailure(`${task.spec.id}: no test file with a package clause in ${p.dir}`);
    // `go test` takes TestXxx only when Xxx does not start with a lower-case letter.
    const c = { mustFail: `TestX${letters(16)}`, mustPass: `TestX${letters(16)}`, token };
    canaries.set(pkg, c);
    const src = [
      `package ${clause}`,
      '',
      'import "testing"',
      '',
      `func ${c.mustFail}(t *testing.T) {`,
      '\ta, b := new(int), new(int)',
      '\tif a != b {',
      `\t\tt.Fatal("${letters(8)}")`,
      '\t}',
      '}',
      '',
      `func ${c.mustPass}(t *testing.T) {`,
      `\tt.Log("${token}")`,
      '}',
      '',
    ].join('\n');
    // Sorted after the repository's test files: the canaries run last. Mode 0600: the agent uid cannot read it.
    tree.files.set(`${prefix}zz${letters(12).toLowerCase()}_test.go`, { content: new TextEncoder().encode(src), mode: 0o600 });
    const names = [...p.tests, c.mustFail, c.mustPass].sort();
    lines.push(`${idx} ${p.dir} ${pkg} ^(${names.join('|')})$`);
    idx++;
  }
  const pkgList = [...pkgs.keys()].sort();
  const nonce = newGradingNonce();
  const jroot = `${JUDGE_WORKDIR}/repo-${nonce}`;
  const rnd = () => randomBytes(8).toString('hex');
  const treeDir = `/tmp/sandgym-repo-${rnd()}`;
  const scratch = `/tmp/sandgym-run-${rnd()}`;
  const binDir = `/tmp/sandgym-gobin-${rnd()}`;
  const tar = await gradingTreeTar(tree.files, []);
  const { testLimitS, runTimeoutMs } = runLimits(repo.timeout_s, opts.budgetMs);
  const ta = performance.now();
  const sb: Sandbox = await opts.provider.acquire(opts.requirement);
  const acquireMs = performance.now() - ta;
  const imageId = sb.image_id ?? null;
  if (imageId === null) {
    await opts.provider.release(sb);
    throw new SandboxFailure(`grading ${task.spec.id} needs its environment image (${opts.requirement.image}); this sandbox runs none (bubblewrap)`);
  }
  let res: Awaited<ReturnType<Sandbox['exec']>>;
  let out: ReturnType<typeof parseRunOutput>;
  const tr = performance.now();
  try {
    await sb.putFiles(
      [
        { path: `${jroot}/tree.tar`, content: tar, mode: 0o400 },
        { path: `${jroot}/packages`, content: `${lines.join('\n')}\n`, mode: 0o400 },
        { path: `${jroot}/grade.sh`, content: GO_GRADE_SH, mode: 0o400 },
        { path: `${jroot}/out/.keep`, content: '', mode: 0o400 },
      ],
      { identity: 'judge' },
    );
    res = await sb.exec({
      argv: ['sh', `${jroot}/grade.sh`, jroot, String(testLimitS), treeDir, scratch, binDir],
      cwd: jroot,
      identity: 'judge',
      stdin: `${nonce}\n`,
      timeout_ms: runTimeoutMs,
      max_output_bytes: 16 * 1024 * 1024,
    });
    out = parseRunOutput(res.stdout, nonce);
    if (out.preflight_failed) throw new SandboxFailure(`grading image ${opts.requirement.image} cannot run Go tests: ${out.log_tail.trim().slice(-500)}`);
    if (!out.complete && !res.timed_out && !res.oom_killed)
      throw new SandboxFailure(`Go repository grading did not complete (exit ${String(res.exit_code)}): ${res.stderr.slice(0, 500)}`);
  } finally {
    await opts.provider.release(sb);
  }
  const runMs = performance.now() - tr;

  let zero: string | undefined;
  let report = 'ok';
  const outcomes: Record<string, string> = {};
  const build = new RegExp(`\\n${nonce}:build:(\\d+):(\\d+)\\n`).exec(res.stdout);
  if (res.oom_killed) zero = 'memory limit exceeded';
  else if (res.timed_out) zero = `tests timed out after ${testLimitS}s`;
  else if (build) {
    const log = (section(res.stdout, nonce, 'buildlog') ?? '').trim();
    const st = build[2];
    zero =
      st === '124' || st === '137'
        ? `the build timed out after ${testLimitS}s`
        : `the submission does not build (go test -c of ${pkgList[Number(build[1])] ?? '?'}): ${log.slice(0, 600)}`;
  } else {
    let i = 0;
    for (const pkg of pkgList) {
      const st = new RegExp(`\\n${nonce}:run:${i}:([^\\n]*)\\n`).exec(res.stdout)?.[1] ?? 'none';
      const events = section(res.stdout, nonce, `events-${i}`);
      i++;
      if (st === '124' || st === '137') {
        zero = `tests timed out after ${testLimitS}s (${pkg})`;
        break;
      }
      if (events === null) {
        zero = `no test output was read for ${pkg}`;
        break;
      }
      const r = readGoRun(events, st, canaries.get(pkg) as { mustFail: string; mustPass: string; token: string }, pkg);
      Object.assign(outcomes, r.outcomes);
      if (r.untrusted) {
        zero = r.untrusted;
        break;
      }
    }
    if (zero !== undefined) report = zero;
  }
  if (zero !== undefined && report === 'ok') report = build ? 'not run (build failed)' : zero;
  const trusted = report === 'ok';
  const graded: Record<string, string> = {};
  for (const id of all) graded[id] = outcomes[id] ?? 'missing';
  let value = 0;
  if (zero === undefined) ({ value, zero } = repoReward(repo, graded));
  const f2pFailed = repo.fail_to_pass.filter((id) => graded[id] !== 'passed');
  const p2pFailed = repo.pass_to_pass.filter((id) => graded[id] !== 'passed');
  const count = (ids: string[], failed: string[]) => ({
    passed: trusted ? ids.length - failed.length : 0,
    total: ids.length,
    failed: (trusted ? failed : ids).slice(0, MAX_LISTED),
  });
  const passed = trusted ? all.filter((id) => graded[id] === 'passed').length : 0;
  return {
    ...base,
    changed: tree.changed,
    workspace_hash: opts.hash,
    image_id: imageId,
    score: zero !== undefined ? combine({}, weights, zero) : combine({ tests: value }, weights),
    tests: {
      collected: all.length,
      passed,
      failed: all.length - passed,
      errors: 0,
      skipped: trusted ? all.filter((id) => graded[id] === 'skipped').length : 0,
    },
    timings_ms: { filter: opts.filterMs, acquire: acquireMs, run: runMs, total: performance.now() - opts.t0 },
    log_tail: out.log_tail,
    failures: (trusted ? [...p2pFailed, ...f2pFailed] : []).slice(0, 50).map((id) => ({ test: id, message: graded[id] ?? 'failed' })),
    repo: {
      isolation: REPO_ISOLATION,
      fail_to_pass: count(repo.fail_to_pass, f2pFailed),
      pass_to_pass: count(repo.pass_to_pass, p2pFailed),
      ignored: tree.ignored,
      report,
      outcomes: trusted ? graded : {},
    },
  };
}
