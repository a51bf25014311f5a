// The one mapping from what happened to an episode onto the outcome taxonomy of PROTOCOL.md §11a, for
// everything that counts or summarises episodes (metrics, task statistics, the archive's summaries).
// Written once here and documented once in docs/OBSERVABILITY.md ("Outcomes and failure causes").
// Codes are matched as registry codes (typed), never by message text; zero_reason is matched by the
// stable prefixes §11a lists.
import type { ErrorCode } from '#protocol/index.js';

/**
 * Why something went wrong, one label value each (sandgym_failures_total{cause}). The first five are
 * the agent's (scored, or refused as its malformed output); the rest are not (never scored).
 */
export const FAILURE_CAUSES = [
  'invalid_action',
  'oom',
  'agent_timeout',
  'agent_error',
  'invalid_argument',
  'timeout',
  'sandbox_infrastructure',
  'env_error',
  'capacity',
  'shutdown',
  'client_error',
  'internal',
] as const;
export type FailureCause = (typeof FAILURE_CAUSES)[number];

/** The failure cause of an error reply (by registry code). */
export function causeOfError(code: ErrorCode | string): FailureCause {
  switch (code) {
    case 'INVALID_ACTION':
      return 'invalid_action';
    case 'INVALID_ARGUMENT':
      return 'invalid_argument';
    case 'TIMEOUT':
      return 'timeout';
    case 'SANDBOX_ERROR':
      return 'sandbox_infrastructure';
    case 'ENV_ERROR':
      return 'env_error';
    case 'CAPACITY':
      return 'capacity';
    case 'SHUTTING_DOWN':
      return 'shutdown';
    case 'INTERNAL':
      return 'internal';
    default:
      // UNKNOWN_ENV, UNKNOWN_SESSION, RESET_NEEDED, UNSUPPORTED, ...: the caller's use of the protocol.
      return 'client_error';
  }
}

/** Classes of `zero_reason` (PROTOCOL.md §11a's stable prefixes), one label value each. */
export const ZERO_REASONS = [
  'memory_limit',
  'test_timeout',
  'runner_killed',
  'tests_modified',
  'runner_status',
  'report_untrusted',
  'workspace',
  'tampering',
  'other',
] as const;
export type ZeroReasonClass = (typeof ZERO_REASONS)[number];

export function zeroReasonClass(reason: string): ZeroReasonClass {
  if (reason.startsWith('memory limit exceeded')) return 'memory_limit';
  if (reason.startsWith('test run timed out') || reason.startsWith('tests timed out') || reason.startsWith('check timed out')) return 'test_timeout';
  if (reason.startsWith('grading run did not complete')) return 'runner_killed';
  if (reason.startsWith('hidden tests modified')) return 'tests_modified';
  if (reason.startsWith('test runner exited with status')) return 'runner_status';
  if (reason.startsWith('collected ') || reason.startsWith('report')) return 'report_untrusted';
  if (reason.startsWith('workspace')) return 'workspace';
  if (reason.startsWith('tampering suspected')) return 'tampering';
  return 'other';
}

/** The scored-zero cause a zero_reason class counts as in sandgym_failures_total. */
export function causeOfZeroReason(z: ZeroReasonClass): FailureCause {
  return z === 'memory_limit' ? 'oom' : z === 'test_timeout' ? 'agent_timeout' : 'agent_error';
}

/** What a step's info says went wrong for the agent (tool envs, graders), without allocating. */
export interface StepFaults {
  /** The agent's command hit the memory limit (info.oom_killed). */
  oom: boolean;
  /** The agent's command hit its deadline (info.timed_out). */
  timedOut: boolean;
  /** The grade's zero_reason (info.zero_reason or info.grade.zero_reason), or null. */
  zeroReason: string | null;
}

/** info.zero_reason (shell-style envs) or info.grade.zero_reason (code-v0), when it is text. */
export function zeroReasonOf(info: Record<string, unknown>): string | null {
  const z = info.zero_reason;
  if (typeof z === 'string') return z;
  const g = info.grade;
  if (typeof g === 'object' && g !== null) {
    const gz = (g as Record<string, unknown>).zero_reason;
    if (typeof gz === 'string') return gz;
  }
  return null;
}

/**
 * How an episode ended (sandgym_episodes_finished_total{outcome}). `success` and `failure` are scored
 * episodes (the env ended them: terminated or truncated); the others were not scored.
 */
export const EPISODE_OUTCOMES = ['success', 'failure', 'timeout', 'sandbox_error', 'env_error', 'abandoned', 'shutdown'] as const;
export type EpisodeOutcome = (typeof EPISODE_OUTCOMES)[number];

/** An episode the env ended scores `success` when its score reaches this (full marks). */
export const SUCCESS_SCORE = 1;

/**
 * An episode's score: info.score of its last step when the env reports one (code-v0: the rubric score;
 * shaping rewards sum to it), else the episode's return (the sum of its rewards).
 */
export function episodeScore(lastInfo: Record<string, unknown> | null, ret: number): number {
  const s = lastInfo?.score;
  return typeof s === 'number' && Number.isFinite(s) ? s : ret;
}

/** The outcome of an episode the server ended with a session-scope error (or a session_closed event's code). */
export function outcomeOfError(code: string): EpisodeOutcome {
  switch (code) {
    case 'TIMEOUT':
      return 'timeout';
    case 'SANDBOX_ERROR':
      return 'sandbox_error';
    case 'SHUTTING_DOWN':
      return 'shutdown';
    case 'ENV_ERROR':
      return 'env_error';
    default:
      return 'env_error';
  }
}

/** Whether an outcome is scored (the episode counts toward a task's pass rate). */
export function isScored(o: EpisodeOutcome): boolean {
  return o === 'success' || o === 'failure';
}
