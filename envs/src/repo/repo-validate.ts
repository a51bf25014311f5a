// `sandgym tasks validate` for repository tasks (issue 32 item 4; docs/TASKS.md, "Repository tasks: validation"). Each
// task is played as training plays it (a fresh agent sandbox seeded with the base tree, the workspace capture, a
// fresh grading sandbox per grading) and must show:
//  - the reference fix scores 1.0, every FAIL_TO_PASS and PASS_TO_PASS test passing with it;
//  - the untouched base scores 0, every FAIL_TO_PASS test failing on it and every PASS_TO_PASS test passing;
//  - identical per-test verdicts on reruns of both (each graded `reruns` times, default 2; a test whose outcome differs
//    is FLAKY: reported by id with the outcomes seen, the task fails until it is dropped from the lists, which
//    `tasks validate --drop-flaky` does through dropFlakyTests below, recording it under tests.excluded_flaky);
//  - no copy of the fixed code reachable from the agent's sandbox: the lines the fix adds are searched for, by
//    content, through the agent sandbox's filesystem (as the agent uid: what an agent could read).
import { createHash } from 'node:crypto';
import type { GradeResult } from '../code/grade.js';
import { applySolution, seedWorkspace } from '../code/agents.js';
import { runDegenerateBattery, type DegenerateReport, type DegenerateVariant, type WorkspaceFileLike } from '../code/degenerate.js';
import type { LoadedTask } from '../code/task-types.js';
import type { Sandbox, SandboxProvider, SandboxRequirement } from '../sandbox-api.js';
import { CaptureRefused, captureTar, captureWorkspace, type CapturedEntry, type CapturedWorkspace } from '../workspace/capture.js';
import { goBodyVariants } from './repo-degenerate-go.js';
import { gradeRepoSubmission, REPO_GRADER_VERSION, type RepoSubmission } from './repo-grade.js';
import type { ExcludedFlaky, RepoTaskJson } from './repo-types.js';

export type { ExcludedFlaky } from './repo-types.js';

export interface RepoValidationReport {
  /** Tests whose outcome differed between gradings of the same submission. */
  flaky: string[];
  /** The outcomes each flaky test had, per submission, in grading order. */
  flaky_seen: FlakySeen[];
  /** Gradings of each submission compared. */
  reruns: number;
  /** FAIL_TO_PASS tests that passed on the untouched base. */
  f2p_pass_on_base: string[];
  /** PASS_TO_PASS tests that failed on the base or with the fix. */
  p2p_broken: string[];
  /** Paths of the agent sandbox holding a line the fix adds (a pristine copy of the fixed code). */
  leaks: string[];
  /** Lines searched for. */
  leak_lines: number;
}

/** One scripted run (validate.ts AgentRun's shape; declared here so validate.ts can import this module without a cycle). */
export interface RepoAgentRun {
  score: number;
  zero_reason?: string;
  tests?: GradeResult['tests'];
  agent_ms: number;
  grade_ms: number;
  grade_timings_ms: GradeResult['timings_ms'];
  image_id?: string | null;
}

/** validate.ts TaskValidation's shape, with the repository checks. */
export interface RepoTaskValidation {
  id: string;
  split: string;
  ok: boolean;
  problems: string[];
  null?: RepoAgentRun;
  reference?: RepoAgentRun;
  repo_checks?: RepoValidationReport;
  /** The degenerate-solution battery (code/degenerate.ts) over the files the fix changes. */
  degenerate?: DegenerateReport;
}

export interface RepoValidateOptions {
  provider: SandboxProvider;
  requirement?: (task: LoadedTask) => SandboxRequirement;
  /** Gradings of the untouched base and of the reference each (default DEFAULT_REPO_RERUNS, at least 2). */
  reruns?: number;
  /** Run the degenerate-solution battery (validate.ts's options: verdict cache, python for the rewriter). */
  degenerate?: { cacheDir?: string | null; python?: string; go?: string };
  /** Driver name, part of the battery's cache key. */
  driver?: string;
}

/** How often validation grades each submission when not told: twice (a rerun). */
export const DEFAULT_REPO_RERUNS = 2;
export const MAX_REPO_RERUNS = 20;

/** A flaky test and what it did: its outcomes on the untouched base and with the reference, one per grading. */
export interface FlakySeen {
  id: string;
  base: string[];
  reference: string[];
}

/** Directories of the agent sandbox searched for the fixed code (everything an agent reads that is not a kernel view). */
const LEAK_ROOTS = ['/workspace', '/usr', '/opt', '/srv', '/home', '/root', '/tmp', '/var', '/etc'];

/**
 * Lines the fix adds that appear nowhere in the base tree, not even inside a longer line (the search is by substring,
 * `grep -F`): the candidates a copy of the fixed code would hold (at most 8).
 */
export function fixLines(task: LoadedTask): string[] {
  return fixRuns(task).flat().slice(0, 8);
}

/**
 * The fix's distinctive lines (fixLines' criteria) in runs: lines that stand next to each other in a fixed file (blank
 * lines between them ignored), in order. A generic fix line (`filename = os.fspath(filename)`) also occurs in the
 * image's standard library, which is no copy of the fix; two such lines next to each other, as the fix has them, are
 * evidence. A run of one line (a one-line fix) is all there is to search for.
 */
export function fixRuns(task: LoadedTask): string[][] {
  const baseTexts = task.workspace.map((f) => Buffer.from(f.content).toString('utf8'));
  const runs: string[][] = [];
  const seen = new Set<string>();
  for (const f of task.solution.files) {
    let run: string[] = [];
    for (const l of Buffer.from(f.content).toString('utf8').split('\n')) {
      const t = l.trim();
      if (t === '') continue;
      const distinctive = t.length >= 16 && !/^(#|"""|\'\'\'|\/\/)/.test(t) && !seen.has(t) && !baseTexts.some((b) => b.includes(t));
      if (!distinctive) {
        if (run.length) runs.push(run);
        run = [];
        continue;
      }
      seen.add(t);
      run.push(t);
    }
    if (run.length) runs.push(run);
  }
  // Longest runs first: the most distinctive evidence is searched for when the list is cut.
  return runs.sort((a, b) => b.length - a.length).slice(0, 8);
}

/** Whether a file's text holds a copy of the fix: two lines of one run adjacent (blank lines ignored), or a one-line run. */
export function holdsFix(text: string, runs: string[][]): boolean {
  const lines = text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '');
  const pairs = new Set<string>();
  const singles = new Set<string>();
  for (const r of runs) {
    if (r.length === 1) singles.add(r[0] as string);
    for (let i = 0; i + 1 < r.length; i++) pairs.add(`${r[i]}\u0000${r[i + 1]}`);
  }
  for (let i = 0; i < lines.length; i++) {
    const l = lines[i] as string;
    if ([...singles].some((s) => l.includes(s))) return true;
    if (i + 1 < lines.length) {
      for (const p of pairs) {
        const [a, b] = p.split('\u0000') as [string, string];
        if (l.includes(a) && (lines[i + 1] as string).includes(b)) return true;
      }
    }
  }
  return false;
}

async function capture(sb: Sandbox): Promise<RepoSubmission> {
  return captureWorkspace(sb, '/workspace').catch((e: unknown) => {
    if (e instanceof CaptureRefused) return e;
    throw e;
  });
}

function toRun(g: GradeResult, agentMs: number, gradeMs: number): RepoAgentRun {
  return {
    score: g.score.total,
    ...(g.score.zero_reason !== undefined ? { zero_reason: g.score.zero_reason } : {}),
    ...(g.tests ? { tests: g.tests } : {}),
    agent_ms: agentMs,
    grade_ms: gradeMs,
    grade_timings_ms: g.timings_ms,
    image_id: g.image_id ?? null,
  };
}

/** Tests whose outcome differs between two gradings of the same submission (the flaky ones). */
export function flakyBetween(a: Pick<GradeResult, 'repo'>, b: Pick<GradeResult, 'repo'>): string[] {
  const x = a.repo?.outcomes ?? {};
  const y = b.repo?.outcomes ?? {};
  return [...new Set([...Object.keys(x), ...Object.keys(y)])].filter((id) => x[id] !== y[id]).sort();
}

/**
 * The flaky tests over any number of gradings of the base and of the reference: a test whose outcome is not the same in
 * every grading of one submission. Only gradings whose report the judge trusted count (an untrusted run has no
 * per-test outcomes worth comparing: it is a problem of its own).
 */
export function flakyAcross(base: readonly Pick<GradeResult, 'repo'>[], reference: readonly Pick<GradeResult, 'repo'>[]): FlakySeen[] {
  const ok = (gs: readonly Pick<GradeResult, 'repo'>[]) => gs.filter((g) => g.repo?.report === 'ok');
  const b = ok(base);
  const r = ok(reference);
  const ids = new Set<string>();
  for (const list of [b, r])
    for (let i = 1; i < list.length; i++)
      for (const id of flakyBetween(list[0] as Pick<GradeResult, 'repo'>, list[i] as Pick<GradeResult, 'repo'>)) ids.add(id);
  const seen = (gs: Pick<GradeResult, 'repo'>[], id: string) => gs.map((g) => g.repo?.outcomes[id] ?? 'missing');
  return [...ids].sort().map((id) => ({ id, base: seen(b, id), reference: seen(r, id) }));
}

/** Dropping the flaky tests would leave no FAIL_TO_PASS test: the task cannot tell a fix from the base, it is invalid. */
export class FlakyDropRefused extends Error {
  override name = 'FlakyDropRefused';
}

/**
 * task.json with the flaky tests removed from fail_to_pass / pass_to_pass and recorded under tests.excluded_flaky (the
 * provenance of the exclusion: which test, which list, what was seen). Pure: the caller writes it. Refuses when no
 * FAIL_TO_PASS test would be left. Flaky ids in neither list (none are expected: outcomes cover the lists) are ignored.
 */
export function dropFlakyTests(
  json: RepoTaskJson,
  flaky: readonly FlakySeen[],
  reruns: number,
  now = new Date(),
): { json: RepoTaskJson; excluded: ExcludedFlaky[] } {
  const drop = new Set(flaky.map((f) => f.id));
  const f2p = json.tests.fail_to_pass.filter((id) => !drop.has(id));
  const p2p = json.tests.pass_to_pass.filter((id) => !drop.has(id));
  if (f2p.length === 0)
    throw new FlakyDropRefused(
      `${json.id}: every FAIL_TO_PASS test is flaky (${json.tests.fail_to_pass.join(', ')}): dropping them leaves no test that tells the fix from the base, so the task is invalid; fix the tests or remove the task`,
    );
  const detected = now.toISOString().slice(0, 10);
  const excluded: ExcludedFlaky[] = flaky
    .filter((f) => json.tests.fail_to_pass.includes(f.id) || json.tests.pass_to_pass.includes(f.id))
    .map((f) => ({
      id: f.id,
      from: json.tests.fail_to_pass.includes(f.id) ? 'fail_to_pass' : 'pass_to_pass',
      seen: { base: f.base, reference: f.reference },
      reruns,
      detected,
    }));
  const before = json.tests.excluded_flaky ?? [];
  return {
    json: { ...json, tests: { ...json.tests, fail_to_pass: f2p, pass_to_pass: p2p, excluded_flaky: [...before, ...excluded] } },
    excluded,
  };
}

/**
 * The repository shape the function tasks' battery lacks: every file the fix changes deleted from the reference's tree
 * (the judge then grades the base tree without them: composeGradingTree deletes the source files a submission lacks).
 */
export function repoExtraVariants(changed: readonly WorkspaceFileLike[]): DegenerateVariant[] {
  if (changed.length === 0) return [];
  return [{ id: 'deleted-files', name: 'every file the reference changed deleted', replace: [], remove: changed.map((f) => f.path) }];
}

/**
 * The capture a degenerate variant submits: the reference run's capture with the variant's files in place, its removed
 * files gone, or nothing at all (deleteAll). Built here, as validate.ts builds mutants' captures, without an agent
 * sandbox per variant. (The shell shapes' `base: 'shipped'` never occurs: repository tasks are Python or Go.)
 */
export async function repoVariantCapture(ref: CapturedWorkspace, v: DegenerateVariant): Promise<CapturedWorkspace> {
  const removed = new Set(v.deleteAll ? ref.capture.entries.map((e) => e.path) : (v.remove ?? []));
  const by = new Map(v.replace.map((r) => [r.path, r.content]));
  const entries: CapturedEntry[] = [];
  const have = new Set<string>();
  for (const e of ref.capture.entries) {
    if (removed.has(e.path)) continue;
    have.add(e.path);
    const c = e.type === 'file' ? by.get(e.path) : undefined;
    entries.push(c !== undefined && e.type === 'file' ? { path: e.path, type: 'file', mode: e.mode, content: c } : e);
  }
  for (const r of v.replace) {
    if (have.has(r.path)) continue;
    const segs = r.path.split('/');
    for (let i = 1; i < segs.length; i++) {
      const d = segs.slice(0, i).join('/');
      if (!have.has(d)) entries.push({ path: d, type: 'directory', mode: 0o755 });
      have.add(d);
    }
    entries.push({ path: r.path, type: 'file', mode: 0o644, content: r.content });
    have.add(r.path);
  }
  entries.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  const capture = { entries, bytes: entries.reduce((n, e) => n + (e.type === 'file' ? e.content.byteLength : 0), 0) };
  return { capture, archive: await captureTar(capture) };
}

export async function validateRepoTask(task: LoadedTask, opts: RepoValidateOptions): Promise<RepoTaskValidation> {
  const repo = task.repo;
  const out: RepoTaskValidation = { id: task.spec.id, split: task.spec.split, ok: false, problems: [] };
  if (!repo) {
    out.problems.push('not a repository task');
    return out;
  }
  const req = opts.requirement?.(task) ?? { image: task.spec.image, ...(task.spec.limits ? { limits: task.spec.limits } : {}) };
  const grade = (sub: RepoSubmission) => gradeRepoSubmission(task, sub, { provider: opts.provider, requirement: req });
  const reruns = Math.max(2, Math.min(MAX_REPO_RERUNS, opts.reruns ?? DEFAULT_REPO_RERUNS));
  const checks: RepoValidationReport = { flaky: [], flaky_seen: [], reruns, f2p_pass_on_base: [], p2p_broken: [], leaks: [], leak_lines: 0 };
  // Each grading's own latency (the first one's is reported, as before reruns could overlap).
  const ms = new WeakMap<GradeResult, number>();
  const timed = async (sub: RepoSubmission) => {
    const t = performance.now();
    const g = await grade(sub);
    ms.set(g, performance.now() - t);
    return g;
  };
  const gradeN = async (sub: RepoSubmission) => {
    const gs: GradeResult[] = [];
    // One after the other, as before reruns were configurable: overlapping gradings (with --concurrency tasks beside
    // them) pushed a loaded 2-core machine past a fixture's 10 s test timeout, a false FAIL of a valid task.
    for (let i = 0; i < reruns; i++) gs.push(await timed(sub));
    return gs;
  };
  try {
    // The untouched base, and the search for the fixed code, in one agent sandbox.
    const t0 = performance.now();
    const sb = await opts.provider.acquire(req);
    let base: RepoSubmission;
    try {
      await seedWorkspace(sb, task);
      const runs = fixRuns(task);
      const lines = runs.flat().slice(0, 16);
      checks.leak_lines = lines.length;
      if (lines.length > 0) {
        // grep finds the files holding any fix line; each (at most 50) is then read as the agent and kept only if it
        // holds the fix's lines as the fix has them (holdsFix): a generic line alone in the stdlib is no copy.
        const r = await sb.exec({
          argv: ['sh', '-c', 'grep -rlF -s "$@" 2>/dev/null | head -50; exit 0', 'leak-search', ...lines.flatMap((l) => ['-e', l]), ...LEAK_ROOTS],
          timeout_ms: 120_000,
          max_output_bytes: 65_536,
        });
        if (r.timed_out) out.problems.push('the search for a copy of the fixed code did not finish in 120 s');
        for (const file of r.stdout.split('\n').filter((l) => l !== '')) {
          const c = await sb.exec({ argv: ['head', '-c', '4194304', '--', file], timeout_ms: 30_000, max_output_bytes: 4_194_304 });
          if (holdsFix(c.stdout, runs)) checks.leaks.push(file);
        }
      }
      base = await capture(sb);
    } finally {
      await opts.provider.release(sb);
    }
    const t1 = performance.now();
    const ns = await gradeN(base);
    const n1 = ns[0] as GradeResult;
    out.null = toRun(n1, t1 - t0, ms.get(n1) ?? 0);
    // The reference: the fix's files written and its deletions made, as an agent would.
    const r0 = performance.now();
    const rb = await opts.provider.acquire(req);
    let ref: RepoSubmission;
    try {
      await seedWorkspace(rb, task);
      await applySolution(rb, task.solution);
      if (repo.solution_deleted.length) await rb.exec({ argv: ['rm', '-f', '--', ...repo.solution_deleted.map((p) => `/workspace/${p}`)], timeout_ms: 30_000 });
      ref = await capture(rb);
    } finally {
      await opts.provider.release(rb);
    }
    const r1 = performance.now();
    const fs = await gradeN(ref);
    const f1 = fs[0] as GradeResult;
    out.reference = toRun(f1, r1 - r0, ms.get(f1) ?? 0);

    if (f1.score.total !== 1)
      out.problems.push(`reference scored ${f1.score.total.toFixed(3)}${f1.score.zero_reason ? ` (${f1.score.zero_reason})` : ''}, expected 1.0`);
    if (n1.score.total !== 0) out.problems.push(`untouched base scored ${n1.score.total.toFixed(3)}, expected 0`);
    const fo = f1.repo?.outcomes ?? {};
    const no = n1.repo?.outcomes ?? {};
    checks.f2p_pass_on_base = repo.fail_to_pass.filter((id) => no[id] === 'passed');
    checks.p2p_broken = repo.pass_to_pass.filter((id) => no[id] !== 'passed' || fo[id] !== 'passed');
    const f2pNotFixed = repo.fail_to_pass.filter((id) => fo[id] !== 'passed');
    if (n1.repo?.report === 'ok' && checks.f2p_pass_on_base.length)
      out.problems.push(`FAIL_TO_PASS tests pass on the untouched base: ${checks.f2p_pass_on_base.slice(0, 5).join(', ')}`);
    if (f1.repo?.report === 'ok' && f2pNotFixed.length) out.problems.push(`FAIL_TO_PASS tests fail with the fix: ${f2pNotFixed.slice(0, 5).join(', ')}`);
    if (f1.repo?.report === 'ok' && n1.repo?.report === 'ok' && checks.p2p_broken.length)
      out.problems.push(`PASS_TO_PASS tests fail on the base or with the fix: ${checks.p2p_broken.slice(0, 5).join(', ')}`);
    checks.flaky_seen = flakyAcross(ns, fs);
    checks.flaky = checks.flaky_seen.map((f) => f.id);
    const scores = (gs: GradeResult[]) => gs.map((g) => g.score.total);
    if (new Set(scores(fs)).size > 1 || new Set(scores(ns)).size > 1)
      out.problems.push(`verdicts differ on rerun (reference ${scores(fs).join(' then ')}, untouched ${scores(ns).join(' then ')})`);
    if (checks.flaky.length)
      out.problems.push(
        `flaky tests (different outcomes on ${reruns} gradings of the same submission): ${checks.flaky_seen
          .slice(0, 10)
          .map((f) => `${f.id} (base ${f.base.join('/')}, reference ${f.reference.join('/')})`)
          .join(', ')}: drop them from the task's lists (\`sandgym tasks validate --drop-flaky\` does, recording them under tests.excluded_flaky)`,
      );
    if (checks.leaks.length) out.problems.push(`a copy of the fixed code is readable in the agent sandbox: ${checks.leaks.slice(0, 5).join(', ')}`);
    // The degenerate battery (docs/TASKS.md): submissions that do no work, derived from the reference's version of the
    // files the fix changes, each graded once (the reward needs every FAIL_TO_PASS and PASS_TO_PASS test, so the
    // untouched base's 0 is the limit's base; a flaky verdict is the rerun check's business, above).
    if (opts.degenerate && 'capture' in ref) {
      const d = opts.degenerate;
      const refCapture = ref;
      const refFiles = ref.capture.entries.flatMap((e) => (e.type === 'file' ? [{ path: e.path, content: e.content, mode: e.mode }] : []));
      // task.json as a whole (the reward's options are not in the task's spec or content hash).
      const jsonDigest = createHash('sha256').update(JSON.stringify(repo.json)).digest('hex').slice(0, 16);
      out.degenerate = await runDegenerateBattery(task, {
        untouched: n1.score.total,
        refFiles,
        cacheDir: d.cacheDir ?? null,
        ...(d.python !== undefined ? { python: d.python } : {}),
        // Go: the function-body shapes (panic, zero values) too, each checked to compile on the host's go.
        extraVariants: async (changed) => [
          ...(repo.language === 'go' ? await goBodyVariants(task.spec.id, refFiles, changed, d.go) : []),
          ...repoExtraVariants(changed),
        ],
        // The repository grader (runner, always-equal scan, grade scripts), the driver, the image's content, the clock.
        environment: `${REPO_GRADER_VERSION}:${opts.driver ?? 'unknown'}:${f1.image_id ?? req.image}:${repo.timeout_s}:${jsonDigest}`,
        grade: async (variant) => {
          const g = await grade(await repoVariantCapture(refCapture, variant));
          return { score: g.score.total, ...(g.score.zero_reason !== undefined ? { zero_reason: g.score.zero_reason } : {}), tests: g.tests };
        },
      });
      out.problems.push(...out.degenerate.problems);
    }
  } catch (err) {
    out.problems.push(`error: ${(err as Error).message}`);
  }
  out.repo_checks = checks;
  out.ok = out.problems.length === 0;
  return out;
}
