// `sandgym tasks stats [--url URL]`: a running server's per-task success statistics
// (GET /v2/tasks/stats), as a table or JSON. The URL may be the server's ws:// endpoint (as other
// commands take it) or its http:// base.
import { PROTOCOL_VERSION, wsPath } from '#protocol/index.js';
import type { TaskStatsReport } from '../observability/task-stats.js';
import { nonEmptyValue, UsageError } from './args.js';
import { CommandFailedError, UnavailableError } from './exit-codes.js';
import type { CliIo } from './io.js';

export const TASKS_STATS_USAGE = `  stats [--url URL] [--token T] [--env ID] [--split S] [--json]
                                         a running server's per-task success statistics
                                         per split (attempts, successes, pass rate, mean
                                         score and steps, unscored endings); URL is its
                                         ws:// endpoint or http:// base (default
                                         http://127.0.0.1:8765); token default $SANDGYM_TOKEN`;

export const TASKS_STATS_OPTIONS = {
  json: { type: 'boolean' },
  url: { type: 'string' },
  token: { type: 'string' },
  env: { type: 'string' },
  split: { type: 'string' },
} as const;

/** The server's HTTP base for a ws(s):// endpoint or an http(s):// URL. */
export function httpBase(raw: string, command: string): string {
  const m = /^(wss?|https?):\/\/([^/?#]+)/.exec(raw);
  if (!m) throw new UsageError(`--url must be a ws://, wss://, http:// or https:// URL, got '${raw}'`, command);
  const scheme = m[1] === 'wss' || m[1] === 'https' ? 'https' : 'http';
  return `${scheme}://${m[2]}`;
}

export interface TasksStatsValues {
  json?: boolean;
  url?: string;
  token?: string;
  env?: string;
  split?: string;
}

export async function runTasksStats(values: TasksStatsValues, io: CliIo, command: string, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const base = httpBase(values.url ?? 'http://127.0.0.1:8765', command);
  const q = new URLSearchParams();
  if (values.env !== undefined) q.set('env', nonEmptyValue('env', values.env, command));
  if (values.split !== undefined) q.set('split', nonEmptyValue('split', values.split, command));
  const url = `${base}/v${PROTOCOL_VERSION}/tasks/stats${q.size ? `?${q}` : ''}`;
  const token = values.token ?? env.SANDGYM_TOKEN;
  let res: Response;
  try {
    res = await fetch(url, { headers: token ? { authorization: `Bearer ${token}` } : {}, signal: AbortSignal.timeout(10_000) });
  } catch (e) {
    throw new UnavailableError(
      `cannot reach ${base} (${(e as Error).cause instanceof Error ? ((e as Error).cause as Error).message : (e as Error).message}); is \`sandgym serve\` running there? (its WebSocket is ${wsPath()})`,
      { cause: e },
    );
  }
  const body = (await res.json().catch(() => null)) as (TaskStatsReport & { error?: { code: string; message: string } }) | null;
  if (res.status === 401) throw new UnavailableError(`${base} asks for a token: pass --token or set SANDGYM_TOKEN`);
  if (!res.ok || body === null || !Array.isArray(body.envs)) {
    const why = body?.error ? `${body.error.code}: ${body.error.message}` : `HTTP ${res.status}`;
    throw new CommandFailedError(`${url}: ${why}`);
  }
  if (values.json) {
    io.out(`${JSON.stringify(body, null, 2)}\n`);
    return;
  }
  io.out(formatStats(body));
}

const pct = (v: number | null) => (v === null ? '-' : `${(v * 100).toFixed(1)}%`);
const num = (v: number | null, digits: number) => (v === null ? '-' : v.toFixed(digits));

/** The report as an aligned text table per env. */
export function formatStats(r: TaskStatsReport): string {
  const out: string[] = [];
  for (const e of r.envs) {
    out.push(`${e.env_id} (${e.tasks.length} task${e.tasks.length === 1 ? '' : 's'})`);
    const rows = [['task', 'split', 'attempts', 'successes', 'pass rate', 'mean score', 'mean steps', 'unscored']];
    for (const t of e.tasks) {
      const unscored = Object.entries(t.unscored)
        .map(([k, v]) => `${k}=${v}`)
        .join(' ');
      rows.push([t.task_id, t.split, String(t.attempts), String(t.successes), pct(t.pass_rate), num(t.mean_score, 3), num(t.mean_steps, 1), unscored || '-']);
    }
    const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)));
    for (const row of rows) out.push(`  ${row.map((c, i) => (i < 2 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ')}`.trimEnd());
  }
  if (r.dropped > 0) out.push(`(${r.dropped} episode(s) without a known task id not counted)`);
  return `${out.join('\n')}\n`;
}
