// Per-task success statistics per split, from the episodes this server sees (EpisodeTracker
// summaries) and, on start, from archived episodes (ingestAll over the archive reader's summaries).
// Read by GET /v2/tasks/stats, `sandgym tasks stats`, and by envs through EnvContext.task_stats (a
// read-only view per env: the env never reaches into the server).
import type { TaskRef, TaskStat, TaskStatsProvider } from '#envs/api.js';
import type { EnvRegistry } from '#envs/registry.js';
import type { EpisodeSummary } from './episode-tracker.js';
import { EPISODE_OUTCOMES, isScored, type EpisodeOutcome } from './outcomes.js';

/** Tasks kept per env that declares no catalog (beyond: dropped and counted), so memory stays bounded. */
export const MAX_UNLISTED_TASKS = 10_000;

interface Entry extends TaskStat {
  task_id: string;
  split: string;
  score_sum: number;
  steps_sum: number;
  /** Episodes that ended without a score, by outcome. */
  unscored: Partial<Record<EpisodeOutcome, number>>;
  last_at: number;
}

/** One task's line in the report (GET /v2/tasks/stats). */
export interface TaskStatsLine {
  task_id: string;
  split: string;
  attempts: number;
  successes: number;
  /** successes / attempts, null before the first attempt. */
  pass_rate: number | null;
  mean_score: number | null;
  mean_steps: number | null;
  unscored: Partial<Record<EpisodeOutcome, number>>;
  /** Epoch ms of the last finished episode, null when none. */
  last_at: number | null;
}

export interface TaskStatsReport {
  envs: { env_id: string; tasks: TaskStatsLine[] }[];
  /** Summaries ignored: no task id, or a task outside the env's catalog, or over MAX_UNLISTED_TASKS. */
  dropped: number;
}

const key = (task: string, split: string) => `${split}\u0000${task}`;

export class TaskStats {
  /** env -> (split, task) -> entry */
  private readonly byEnv = new Map<string, Map<string, Entry>>();
  /** env -> its catalog's keys (absent: the env declares none). */
  private readonly catalogs = new Map<string, Set<string>>();
  private dropped = 0;

  constructor(registry: EnvRegistry) {
    for (const entry of registry.list()) {
      const e = entry.def.id;
      const refs: readonly TaskRef[] | undefined = entry.def.catalog?.();
      if (!refs) continue;
      const m = new Map<string, Entry>();
      const keys = new Set<string>();
      for (const r of refs) {
        keys.add(key(r.id, r.split));
        m.set(key(r.id, r.split), blank(r.id, r.split));
      }
      this.catalogs.set(e, keys);
      this.byEnv.set(e, m);
    }
  }

  /** Counts one finished episode (scored ones toward attempts and successes). */
  ingest(s: EpisodeSummary): void {
    if (s.task_id === null) return;
    const split = s.split ?? '';
    const k = key(s.task_id, split);
    let m = this.byEnv.get(s.env_id);
    const catalog = this.catalogs.get(s.env_id);
    if (catalog !== undefined && !catalog.has(k)) {
      this.dropped++;
      return;
    }
    if (m === undefined) {
      m = new Map();
      this.byEnv.set(s.env_id, m);
    }
    let e = m.get(k);
    if (e === undefined) {
      if (m.size >= MAX_UNLISTED_TASKS) {
        this.dropped++;
        return;
      }
      e = blank(s.task_id, split);
      m.set(k, e);
    }
    if (isScored(s.outcome)) {
      e.attempts++;
      if (s.success) e.successes++;
      e.score_sum += s.score;
      e.steps_sum += s.steps;
    } else {
      e.unscored[s.outcome] = (e.unscored[s.outcome] ?? 0) + 1;
    }
    if (s.ended_at > e.last_at) e.last_at = s.ended_at;
  }

  /** Counts every summary of a source (the archive's reader on start); returns how many were read. */
  async ingestAll(source: AsyncIterable<EpisodeSummary> | Iterable<EpisodeSummary>): Promise<number> {
    let n = 0;
    for await (const s of source) {
      this.ingest(s);
      n++;
    }
    return n;
  }

  /** The read-only view an env gets (EnvContext.task_stats). */
  viewFor(envId: string): TaskStatsProvider {
    return {
      get: (taskId: string, split: string): TaskStat | undefined => {
        const e = this.byEnv.get(envId)?.get(key(taskId, split));
        return e === undefined ? undefined : { attempts: e.attempts, successes: e.successes };
      },
    };
  }

  report(filter: { env?: string; split?: string } = {}): TaskStatsReport {
    const envs: TaskStatsReport['envs'] = [];
    for (const [env, m] of [...this.byEnv].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
      if (filter.env !== undefined && env !== filter.env) continue;
      const tasks: TaskStatsLine[] = [];
      for (const e of m.values()) {
        if (filter.split !== undefined && e.split !== filter.split) continue;
        tasks.push({
          task_id: e.task_id,
          split: e.split,
          attempts: e.attempts,
          successes: e.successes,
          pass_rate: e.attempts > 0 ? e.successes / e.attempts : null,
          mean_score: e.attempts > 0 ? e.score_sum / e.attempts : null,
          mean_steps: e.attempts > 0 ? e.steps_sum / e.attempts : null,
          unscored: { ...e.unscored },
          last_at: e.last_at > 0 ? e.last_at : null,
        });
      }
      tasks.sort((a, b) => (a.split !== b.split ? (a.split < b.split ? -1 : 1) : a.task_id < b.task_id ? -1 : a.task_id > b.task_id ? 1 : 0));
      envs.push({ env_id: env, tasks });
    }
    return { envs, dropped: this.dropped };
  }
}

function blank(task_id: string, split: string): Entry {
  return { task_id, split, attempts: 0, successes: 0, score_sum: 0, steps_sum: 0, unscored: {}, last_at: 0 };
}

/** The outcomes a report's `unscored` may name (for documentation and tests). */
export const UNSCORED_OUTCOMES = EPISODE_OUTCOMES.filter((o) => !isScored(o));
