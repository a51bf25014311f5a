// `sandgym tasks list|check|validate <dir...>` (dispatched from server/src/cli/run.ts).
// validate needs real sandboxes: the sandbox layer is imported dynamically, so envs/ keeps no static
// dependency on server/ and `tasks list`/`check` never load dockerode.
import { parseArgs } from 'node:util';
import type { SandboxProvider } from '../sandbox-api.js';
import { runTasksCheck } from './leakage.js';
import { loadTaskSets, TaskLoadError } from './task-loader.js';
import type { LoadedTask } from './task-types.js';
import { formatValidation, validateTasks, type TaskValidation } from './validate.js';

export const TASKS_HELP = `Usage: sandgym tasks <list|check|validate> <dir...> [options]

  list <dir...> [--json]                 list the tasks of one or more task sets
  check <dir...> [--threshold X] [--json]
                                         leakage check: fails (exit 1) when a task is in both
                                         train and eval by id or content, or near-duplicates
                                         straddle the splits (Jaccard >= X, default 0.8)
  validate <dir...> [--driver docker|local|auto] [--concurrency N] [--only id,...] [--json]
                                         run the null and the reference agent on every task in
                                         real sandboxes; fails (exit 1) unless every reference
                                         scores 1.0 and every null agent below 1.0
Exit codes: 0 ok, 1 check/validation failed, 2 usage or task-set load error.`;

type Out = { out: (s: string) => void; err: (s: string) => void };
const stdio: Out = { out: (s) => process.stdout.write(s), err: (s) => process.stderr.write(s) };

class Usage extends Error {}

export interface ProviderHandle {
  provider: SandboxProvider;
  driver: string;
  close(): Promise<void>;
}

/**
 * A SandboxProvider over the sandbox layer's driver + warm pools (the same adapter the server uses
 * per session), built through dynamic imports.
 */
export async function openSandboxProvider(kind: 'docker' | 'local' | 'auto', opts: { maxTotal?: number; minIdle?: number } = {}): Promise<ProviderHandle> {
  const sandboxMod = '../../../server/src/sandbox/index.js';
  const adapterMod = '../../../server/src/sandbox-adapter.js';
  const { createDriver, PoolSet } = (await import(sandboxMod)) as typeof import('../../../server/src/sandbox/index.js');
  const { PooledSandboxService } = (await import(adapterMod)) as typeof import('../../../server/src/sandbox-adapter.js');
  const driver = await createDriver(kind);
  const pools = new PoolSet(driver, { minIdle: opts.minIdle ?? 2, maxTotal: opts.maxTotal ?? 8, statsLogIntervalMs: 0 });
  const service = new PooledSandboxService(driver, pools);
  const abort = new AbortController();
  const failures: string[] = [];
  const provider = service.forSession('tasks-cli', abort.signal, (reason) => failures.push(reason));
  return {
    provider,
    driver: (driver as { kind?: string }).kind ?? kind,
    async close() {
      abort.abort();
      await provider.releaseAll();
      await service.close();
    },
  };
}

function pct(xs: number[], p: number): number {
  if (xs.length === 0) return 0;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))] ?? 0;
}

export function validationSummary(results: readonly TaskValidation[]) {
  const grades = results.flatMap((r) => [r.reference?.grade_ms, r.null?.grade_ms]).filter((x): x is number => x !== undefined);
  const runs = results.flatMap((r) => [r.reference?.grade_timings_ms.run, r.null?.grade_timings_ms.run]).filter((x): x is number => x !== undefined);
  return {
    tasks: results.length,
    failed: results.filter((r) => !r.ok).length,
    gradings: grades.length,
    grade_ms: { p50: Math.round(pct(grades, 50)), p95: Math.round(pct(grades, 95)), max: Math.round(Math.max(0, ...grades)) },
    run_ms: { p50: Math.round(pct(runs, 50)), p95: Math.round(pct(runs, 95)) },
  };
}

async function loadOrUsage(dirs: string[]): Promise<LoadedTask[]> {
  if (dirs.length === 0) throw new Usage('give at least one task-set directory');
  return loadTaskSets(dirs);
}

async function list(argv: string[], io: Out): Promise<number> {
  const { values, positionals } = parseArgs({ args: argv, allowPositionals: true, strict: true, options: { json: { type: 'boolean' } } });
  const tasks = await loadOrUsage(positionals);
  const rows = tasks.map((t) => ({ id: t.spec.id, split: t.spec.split, difficulty: t.spec.difficulty, language: t.spec.language, tests: t.spec.test.expected_tests, max_steps: t.spec.max_steps, shaping: t.spec.shaping }));
  if (values.json) io.out(JSON.stringify(rows, null, 2) + '\n');
  else {
    for (const r of rows) io.out(`${r.id.padEnd(28)} ${r.split.padEnd(5)} ${r.difficulty.padEnd(6)} ${r.language.padEnd(10)} ${String(r.tests).padStart(3)} tests\n`);
    const by = (s: string) => rows.filter((r) => r.split === s).length;
    io.out(`${rows.length} tasks (train ${by('train')}, eval ${by('eval')})\n`);
  }
  return 0;
}

async function check(argv: string[], io: Out): Promise<number> {
  const { values, positionals } = parseArgs({ args: argv, allowPositionals: true, strict: true, options: { json: { type: 'boolean' }, threshold: { type: 'string' } } });
  if (positionals.length === 0) throw new Usage('give at least one task-set directory');
  let threshold: number | undefined;
  if (values.threshold !== undefined) {
    threshold = Number(values.threshold);
    if (!/^\d*\.?\d+$/.test(values.threshold) || !(threshold > 0 && threshold <= 1)) throw new Usage(`--threshold must be a number in (0, 1], got '${values.threshold}'`);
  }
  const r = await runTasksCheck(positionals, threshold !== undefined ? { threshold } : {});
  if (values.json) io.out(JSON.stringify(r.report ?? { ok: false, error: r.text }, null, 2) + '\n');
  else io.out(r.text + '\n');
  return r.ok ? 0 : 1;
}

async function validate(argv: string[], io: Out): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: { json: { type: 'boolean' }, driver: { type: 'string' }, concurrency: { type: 'string' }, only: { type: 'string' } },
  });
  const driver = values.driver ?? 'auto';
  if (driver !== 'docker' && driver !== 'local' && driver !== 'auto') throw new Usage(`--driver must be docker, local or auto, got '${driver}'`);
  const concurrency = values.concurrency === undefined ? 2 : Number(values.concurrency);
  if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > 64) throw new Usage(`--concurrency must be an integer in 1..64, got '${values.concurrency}'`);
  let tasks = await loadOrUsage(positionals);
  if (values.only !== undefined) {
    const ids = values.only.split(',').map((s) => s.trim()).filter(Boolean);
    const unknown = ids.filter((id) => !tasks.some((t) => t.spec.id === id));
    if (unknown.length) throw new Usage(`--only: unknown task id(s) ${unknown.join(', ')}`);
    tasks = tasks.filter((t) => ids.includes(t.spec.id));
  }
  const t0 = performance.now();
  const handle = await openSandboxProvider(driver, { maxTotal: concurrency + 2 });
  let res: Awaited<ReturnType<typeof validateTasks>>;
  try {
    res = await validateTasks(tasks, {
      provider: handle.provider,
      concurrency,
      killStragglers: true,
      onResult: (r) => {
        if (!values.json) io.err(`${r.ok ? 'ok  ' : 'FAIL'} ${r.id} (ref ${r.reference?.score.toFixed(2) ?? '-'} in ${Math.round((r.reference?.agent_ms ?? 0) + (r.reference?.grade_ms ?? 0))}ms, null ${r.null?.score.toFixed(2) ?? '-'} in ${Math.round((r.null?.agent_ms ?? 0) + (r.null?.grade_ms ?? 0))}ms)\n`);
      },
    });
  } finally {
    await handle.close();
  }
  const wall = Math.round(performance.now() - t0);
  const summary = { ...validationSummary(res.results), driver: handle.driver, concurrency, wall_ms: wall };
  if (values.json) io.out(JSON.stringify({ ok: res.ok, summary, results: res.results }, null, 2) + '\n');
  else io.out(`${formatValidation(res.results)}\ndriver ${summary.driver}, concurrency ${concurrency}, wall ${(wall / 1000).toFixed(1)}s\n`);
  return res.ok ? 0 : 1;
}

export async function runTasksCli(argv: string[], io: Out = stdio): Promise<number> {
  const [sub, ...rest] = argv;
  try {
    switch (sub) {
      case 'list':
        return await list(rest, io);
      case 'check':
        return await check(rest, io);
      case 'validate':
        return await validate(rest, io);
      case undefined:
      case '-h':
      case '--help':
      case 'help':
        io.out(TASKS_HELP + '\n');
        return sub === undefined ? 2 : 0;
      default:
        throw new Usage(`unknown subcommand '${sub}'`);
    }
  } catch (e) {
    const code = (e as { code?: string }).code;
    if (e instanceof Usage || (typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS'))) {
      io.err(`sandgym tasks: ${(e as Error).message}\nRun "sandgym tasks --help" for usage.\n`);
      return 2;
    }
    if (e instanceof TaskLoadError) {
      io.err(`sandgym tasks: ${e.message}\n`);
      return 2;
    }
    throw e;
  }
}
