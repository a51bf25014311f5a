// `sandgym rescore ARCHIVE`: re-grades the workspaces archived with code-v0 episodes (the tar the env
// graded last: EnvContext.artifacts `final_workspace`) with today's grader and task set, in fresh
// sandboxes, and reports every episode whose score changed (grader drift: a task's tests, the grader,
// the image changed). The score compared is the rubric total of the last grade, which is also the sum
// of the episode's rewards (code-v0 rewards are potential-based shaping of it).
import { Buffer } from 'node:buffer';
import { createHash } from 'node:crypto';
import type { OpenSandboxProvider } from '#sandbox-contract/index.js';
import { gradeSubmission } from '#envs/code/grade.js';
import { resolveTaskDirs } from '#envs/code/shipped-repo.js';
import { loadTaskSets } from '#envs/code/task-loader.js';
import type { LoadedTask } from '#envs/code/task-types.js';
import { CaptureRefused, parseCapture } from '#envs/workspace/capture.js';
import type { EpisodeRecord } from '../observability/archive/format.js';
import { loadArchive } from '../observability/archive/reader.js';
import { choiceValue, intValue, nonEmptyValue, parseCommand, type CommandDef, type OptionDefs } from './args.js';
import { CommandFailedError, EXIT, UnavailableError } from './exit-codes.js';
import type { CliIo } from './io.js';

export const RESCORE_HELP = `Usage: sandgym rescore <archive> [options]

Re-grade the final workspaces of archived code-v0 episodes with today's grader and
task set, each in a fresh grading sandbox, and report every episode whose score
changed (grader drift). <archive> is an archive file (.jsonl.gz), a directory written by
serve --archive DIR, or s3://bucket/prefix (AWS_* variables as for serve).

Options:
  --tasks <dir>          task set to grade with (repeatable; default both shipped sets:
                         @functions and @repository)
  --driver <kind>        docker | local | auto (default auto)
  --episode <id>         re-grade only this episode (repeatable)
  --concurrency <n>      gradings at once (default 2)
  --json                 one JSON object per re-graded episode, then a summary object
  -h, --help             show this help

Episodes without an archived workspace (other envs, or an episode never graded) and
episodes whose task is not in the task set or whose archived tar cannot be read are
counted as skipped. The score compared is
the last grade's rubric total, which is also the sum of the episode's rewards.

Exit codes: 0 no score changed; 1 some score changed (listed); 2 usage; 3 the archive or
task set cannot be read; 4 no sandbox driver.`;

const RESCORE_COMMAND = {
  name: 'rescore',
  help: RESCORE_HELP,
  options: {
    tasks: { type: 'string', multiple: true },
    driver: { type: 'string' },
    episode: { type: 'string', multiple: true },
    concurrency: { type: 'string' },
    json: { type: 'boolean' },
  },
  positionals: { name: '<archive>', min: 1, max: 1 },
} as const satisfies CommandDef<OptionDefs>;

export interface RescoreDeps {
  openSandboxProvider: OpenSandboxProvider;
}

export interface Rescored {
  episode_id: string;
  task_id: string;
  old_score: number;
  new_score: number;
  changed: boolean;
  old_task_hash: string | null;
  new_task_hash: string;
  old_tests: string | null;
  new_tests: string | null;
  zero_reason?: string;
}

/** Scores within this are equal (floating-point rubric sums). */
const SCORE_EPSILON = 1e-9;

type Skip = { episode_id: string; reason: string };

/** What can be re-graded: the workspace bytes and the archived score, or why not. */
export function rescorable(r: EpisodeRecord, tasks: ReadonlyMap<string, LoadedTask>): { tar: Uint8Array; old: number; task: LoadedTask } | Skip {
  const skip = (reason: string) => ({ episode_id: r.episode_id, reason });
  const ws = r.final_workspace;
  if (!ws) return skip('no archived workspace');
  if ('omitted' in ws) return skip(`workspace not archived (${ws.omitted})`);
  const score = r.grade?.score;
  if (typeof score !== 'number') return skip('no archived grade');
  if (!r.task) return skip('no task id');
  const task = tasks.get(r.task.id);
  if (!task) return skip(`task ${r.task.id} is not in the task set`);
  const tar = Buffer.from(ws.data, 'base64');
  if (tar.byteLength !== ws.bytes || createHash('sha256').update(tar).digest('hex') !== ws.sha256)
    return skip('archived workspace is corrupt (size or sha256 mismatch)');
  return { tar, old: score, task };
}

/**
 * Why an archived tar cannot be read (truncated, not a tar: an edited archive), or null. Read in memory
 * as the grader reads it; a tar over the grader's caps is readable here (the grader scores it 0).
 * Checked before grading so one bad episode is skipped instead of ending the whole re-grade.
 */
async function unreadableTar(tar: Uint8Array): Promise<string | null> {
  try {
    await parseCapture(tar);
    return null;
  } catch (e) {
    // A capture the grader refuses (a cap, a special file, a hostile entry) is readable: the grader scores it 0 with the reason.
    return e instanceof CaptureRefused && e.rule !== 'unreadable_archive' ? null : `archived workspace is not a readable tar (${(e as Error).message})`;
  }
}

function testsText(t: unknown): string | null {
  if (typeof t !== 'object' || t === null) return null;
  const { passed, collected } = t as { passed?: unknown; collected?: unknown };
  return typeof passed === 'number' && typeof collected === 'number' ? `${passed}/${collected}` : null;
}

export async function runRescore(argv: string[], io: CliIo, deps: RescoreDeps): Promise<number> {
  const parsed = parseCommand(RESCORE_COMMAND, argv);
  if (parsed === null) {
    io.out(RESCORE_HELP + '\n');
    return EXIT.OK;
  }
  const { values, positionals } = parsed;
  const cmd = RESCORE_COMMAND.name;
  const source = nonEmptyValue('archive', positionals[0] as string, cmd);
  const driver = values.driver === undefined ? 'auto' : choiceValue('driver', values.driver, ['docker', 'local', 'auto'] as const, cmd);
  const concurrency = values.concurrency === undefined ? 2 : intValue('concurrency', values.concurrency, 1, 64, cmd);
  for (const t of values.tasks ?? []) nonEmptyValue('tasks', t, cmd);
  const json = values.json ?? false;

  const taskList = await loadTaskSets(await resolveTaskDirs(values.tasks));
  const tasks = new Map(taskList.map((t) => [t.spec.id, t]));
  let records = await loadArchive(source);
  if (values.episode) {
    const wanted = new Set(values.episode);
    records = records.filter((r) => wanted.has(r.episode_id));
    if (records.length === 0) throw new CommandFailedError(`no episode ${values.episode.join(', ')} in ${source}`);
  }
  const work: { r: EpisodeRecord; tar: Uint8Array; old: number; task: LoadedTask }[] = [];
  const skipped: Skip[] = [];
  for (const r of records) {
    const x = rescorable(r, tasks);
    if ('reason' in x) skipped.push(x);
    else work.push({ r, ...x });
  }

  const results: Rescored[] = [];
  if (work.length > 0) {
    let handle: Awaited<ReturnType<OpenSandboxProvider>>;
    try {
      handle = await deps.openSandboxProvider(driver, { maxTotal: concurrency + 1, minIdle: 0 });
    } catch (e) {
      throw new UnavailableError(`cannot open a sandbox driver (--driver ${driver}): ${(e as Error).message}`, { cause: e });
    }
    try {
      let next = 0;
      const worker = async () => {
        while (next < work.length) {
          const w = work[next++] as (typeof work)[number];
          const unreadable = await unreadableTar(w.tar);
          if (unreadable !== null) {
            skipped.push({ episode_id: w.r.episode_id, reason: unreadable });
            continue;
          }
          const g = await gradeSubmission(w.task, w.tar, {
            provider: handle.provider,
            requirement: { image: w.task.spec.image, ...(w.task.spec.limits ? { limits: w.task.spec.limits } : {}) },
            killStragglers: true,
          });
          const res: Rescored = {
            episode_id: w.r.episode_id,
            task_id: w.task.spec.id,
            old_score: w.old,
            new_score: g.score.total,
            changed: Math.abs(g.score.total - w.old) > SCORE_EPSILON,
            old_task_hash: w.r.task?.content_hash ?? null,
            new_task_hash: w.task.content_hash,
            old_tests: testsText(w.r.grade?.tests),
            new_tests: g.tests ? `${g.tests.passed}/${g.tests.collected}` : null,
            ...(g.score.zero_reason !== undefined ? { zero_reason: g.score.zero_reason } : {}),
          };
          results.push(res);
          if (json) io.out(JSON.stringify(res) + '\n');
          else if (res.changed) {
            const hash = res.old_task_hash !== res.new_task_hash ? ' (task changed since)' : '';
            const tests = res.old_tests || res.new_tests ? `, tests ${res.old_tests ?? '?'} -> ${res.new_tests ?? '?'}` : '';
            io.out(
              `CHANGED episode ${res.episode_id} task ${res.task_id}: ${fmt(res.old_score)} -> ${fmt(res.new_score)}${tests}${hash}${res.zero_reason ? ` [${res.zero_reason}]` : ''}\n`,
            );
          }
        }
      };
      await Promise.all(Array.from({ length: Math.min(concurrency, work.length) }, worker));
    } finally {
      await handle.close();
    }
  }
  const changed = results.filter((r) => r.changed);
  const summary = {
    episodes: records.length,
    regraded: results.length,
    changed: changed.length,
    changed_tasks: [...new Set(changed.map((c) => c.task_id))].sort(),
    skipped: skipped.length,
  };
  if (json) io.out(JSON.stringify({ summary, skipped }) + '\n');
  else {
    io.out(
      `${summary.regraded} episode(s) re-graded, ${summary.changed} changed${summary.changed ? ` (tasks: ${summary.changed_tasks.join(', ')})` : ''}, ${summary.skipped} skipped\n`,
    );
    for (const s of skipped) io.err(`skipped ${s.episode_id}: ${s.reason}\n`);
  }
  return changed.length === 0 ? EXIT.OK : EXIT.FAILED;
}

function fmt(n: number): string {
  return Number.isInteger(n) ? String(n) : n.toFixed(4).replace(/0+$/, '');
}
