// The trajectory archive's record: one finished episode per JSON line, many lines per gzip object
// (docs/OBSERVABILITY.md, "Trajectory archive"). Declared once here; the recorder writes it, the
// reader, `sandgym replay`, `sandgym rescore` and `sandgym report` read it. A new field is additive
// (readers ignore what they do not know); a change of meaning bumps ARCHIVE_FORMAT.

/** The value of every record's `format` field. */
export const ARCHIVE_FORMAT = 'sandgym.episode/1';

import type { StepResult } from '#protocol/index.js';
import { EPISODE_OUTCOMES, type EpisodeOutcome } from '../outcomes.js';

/**
 * What ended an episode, as replay needs it (the outcome on the shared taxonomy is `outcome`).
 * `terminated` / `truncated`: the env or the server's step limit ended it (scored). `error`: a
 * session-scope error ended it (TIMEOUT, SANDBOX_ERROR, ENV_ERROR), or its reset failed. `closed`: the
 * session closed while the episode was running (client close, disconnect, idle reaping, shutdown).
 * `abandoned`: the client reset the session before the episode ended.
 */
export type EpisodeEnd = 'terminated' | 'truncated' | 'error' | 'closed' | 'abandoned';

export const EPISODE_ENDS: readonly EpisodeEnd[] = ['terminated', 'truncated', 'error', 'closed', 'abandoned'];

export interface ArchivedError {
  op: 'make' | 'reset' | 'step' | 'close';
  code: string;
  scope: string;
  message: string;
  details?: Record<string, unknown>;
  /** For a step error: the index the step would have had. */
  step_index?: number;
  /**
   * For a step error: the action the client sent (INVALID_ACTION, TIMEOUT, SANDBOX_ERROR...), as it was
   * sent. Absent in a record without steps (steps_omitted) and in records written before it was added.
   */
  action?: unknown;
  t: number;
}

/**
 * A step as archived: the protocol's step result (declared once, protocol/schema; its info as the client got
 * it: reward_components, the grading report..., hidden-test text removed) with its index, action and timing.
 */
export interface ArchivedStep extends StepResult {
  /** 0 for the first step. */
  step: number;
  action: unknown;
  duration_ms: number;
  t: number;
}

/** What an env recorded for re-grading (code-v0: the agent workspace it graded last, as a tar). */
export interface ArchivedWorkspace {
  encoding: 'tar+base64';
  bytes: number;
  sha256: string;
  data: string;
}

export interface EpisodeRecord {
  format: typeof ARCHIVE_FORMAT;
  episode_id: string;
  /** The server process that ran it (unique per process start; several replicas may share an archive). */
  server: { instance: string; version: string };
  session_id: string;
  connection_id: string | null;
  env_id: string;
  kwargs: Record<string, unknown>;
  /** Task envs: the task's id, split and content hash (reset info task_id, split, task_hash). */
  task: { id: string; split: string | null; content_hash: string | null } | null;
  seed: number | null;
  options: Record<string, unknown>;
  started_at: string;
  ended_at: string;
  end: EpisodeEnd;
  /**
   * How it ended on the one outcome taxonomy of metrics and task statistics (observability/outcomes.ts:
   * success, failure, timeout, sandbox_error, env_error, abandoned, shutdown), decided as the episode
   * tracker decides it; `score` is episodeScore() (the last step's info.score, else the return) and
   * `success` is outcome === 'success'.
   */
  outcome: EpisodeOutcome;
  score: number;
  success: boolean;
  /** For `error`: the error that ended it; for `closed`: why the session closed. */
  error?: ArchivedError;
  close_reason?: string;
  /** Sum of the step rewards, and the number of steps. */
  return: number;
  length: number;
  reset: { observation: unknown; info: Record<string, unknown>; duration_ms: number } | null;
  steps: ArchivedStep[];
  /** Request-scope errors inside the episode (INVALID_ACTION...): the session survived them. */
  request_errors: ArchivedError[];
  /** The last grading report of the episode (code-v0: info.grade of its last graded step) and its grader. */
  grade: Record<string, unknown> | null;
  grader: Record<string, unknown> | null;
  final_workspace?: ArchivedWorkspace | { omitted: string; bytes: number };
  /**
   * Present when the episode's trajectory was dropped (past the per-episode cap, or the archive's memory
   * cap): `steps` is empty, and kwargs, options, the reset observation and the workspace are left out;
   * outcome, score, length and the grade are kept.
   */
  steps_omitted?: { reason: 'episode_too_large' | 'memory' | 'tenant_memory'; steps: number };
}

export class ArchiveFormatError extends Error {
  override readonly name = 'ArchiveFormatError';
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Parses one archive line into a record, checking the fields every reader relies on. Throws
 * ArchiveFormatError naming `where` (file and line) and the first bad field.
 */
export function parseEpisodeLine(line: string, where: string): EpisodeRecord {
  let v: unknown;
  try {
    v = JSON.parse(line);
  } catch (e) {
    throw new ArchiveFormatError(`${where}: not JSON (${(e as Error).message})`);
  }
  if (!isObject(v)) throw new ArchiveFormatError(`${where}: expected a JSON object`);
  if (v.format !== ARCHIVE_FORMAT) throw new ArchiveFormatError(`${where}: format ${JSON.stringify(v.format)} is not ${ARCHIVE_FORMAT}`);
  const bad = (field: string, want: string) => new ArchiveFormatError(`${where}: field ${field} must be ${want}`);
  for (const k of ['episode_id', 'session_id', 'env_id', 'started_at', 'ended_at'] as const) if (typeof v[k] !== 'string') throw bad(k, 'a string');
  if (!EPISODE_ENDS.includes(v.end as EpisodeEnd)) throw bad('end', `one of ${EPISODE_ENDS.join(', ')}`);
  if (!(EPISODE_OUTCOMES as readonly string[]).includes(v.outcome as string)) throw bad('outcome', `one of ${EPISODE_OUTCOMES.join(', ')}`);
  if (typeof v.score !== 'number' || typeof v.success !== 'boolean') throw bad('score/success', 'a number and a boolean');
  if (!isObject(v.kwargs)) throw bad('kwargs', 'an object');
  if (!isObject(v.options)) throw bad('options', 'an object');
  if (v.seed !== null && !Number.isSafeInteger(v.seed)) throw bad('seed', 'an integer or null');
  if (typeof v.return !== 'number' || !Number.isInteger(v.length)) throw bad('return/length', 'numbers');
  if (!Array.isArray(v.steps)) throw bad('steps', 'an array');
  v.steps.forEach((s, i) => {
    if (!isObject(s) || typeof s.reward !== 'number' || typeof s.terminated !== 'boolean' || typeof s.truncated !== 'boolean' || !('action' in s)) {
      throw bad(`steps[${i}]`, 'a step {action, observation, reward, terminated, truncated, info}');
    }
  });
  if (v.task !== null && (!isObject(v.task) || typeof v.task.id !== 'string')) throw bad('task', 'null or {id, split, content_hash}');
  if (!Array.isArray(v.request_errors)) throw bad('request_errors', 'an array');
  // Checked above: the fields every reader relies on; the rest is what the recorder wrote.
  const checked: unknown = v;
  return checked as EpisodeRecord;
}
