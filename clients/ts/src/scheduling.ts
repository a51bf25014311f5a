// Scheduling helpers for rollout code (PROTOCOL.md §6a, §11a): a group of sessions admitted as one
// unit, and an opt-in rerun of an episode that failed for infrastructure reasons. Which failures are
// infrastructure is PROTOCOL.md §11a's table, not a guess: those are never scored, so running the
// episode again loses nothing; a policy's own failure (rewards, INVALID_ACTION, ENV_ERROR) is never rerun.
import type { EnvHandle } from './env-handle.js';
import { SandgymError } from './errors.js';

/**
 * §11a's outcomes whose row says "run the episode again, never score it": the sandbox failed
 * (SANDBOX_ERROR), the env or its infrastructure overran the deadline (TIMEOUT), the scheduler reclaimed
 * the sandbox (PREEMPTED), the connection was lost (RESUME_EXPIRED, and the client-side REPLY_LOST).
 */
export const INFRA_FAILURE_CODES: ReadonlySet<string> = new Set(['SANDBOX_ERROR', 'TIMEOUT', 'PREEMPTED', 'RESUME_EXPIRED', 'REPLY_LOST']);

/** True when `err` is an infrastructure failure of §11a (an episode worth running again). */
export function isInfraFailure(err: unknown): err is SandgymError {
  return err instanceof SandgymError && INFRA_FAILURE_CODES.has(err.code);
}

export interface RerunOptions {
  /** Runs of the episode at most, the first included (default 3). */
  attempts?: number;
  /** Told before each rerun (for logs and counters). */
  onRerun?: (err: SandgymError, attempt: number) => void;
}

/**
 * Runs `episode` and runs it again, from the start, when it fails with an infrastructure failure
 * (INFRA_FAILURE_CODES), up to `attempts` runs; any other error, and the last failure, propagate.
 * `episode` gets the attempt number (1-based) and must start a fresh episode each time (make or reset
 * inside it): a failed episode's partial trajectory is infrastructure noise, never a sample.
 */
export async function rerunOnInfraFailure<T>(episode: (attempt: number) => Promise<T>, opts: RerunOptions = {}): Promise<T> {
  const attempts = opts.attempts ?? 3;
  if (!Number.isInteger(attempts) || attempts < 1) throw new RangeError(`attempts must be an integer >= 1 (got ${String(attempts)})`);
  for (let attempt = 1; ; attempt++) {
    try {
      return await episode(attempt);
    } catch (err) {
      if (!isInfraFailure(err) || attempt >= attempts) throw err;
      opts.onRerun?.(err, attempt);
    }
  }
}

/** A group of sessions admitted together (client.group): its members and its completion. */
export class EnvGroup<O = unknown, A = unknown> {
  constructor(
    /** The server's group id. */
    readonly id: string,
    /** One handle per member session. */
    readonly members: EnvHandle<O, A>[],
    /** Resolves on group_complete: the last member closed and the group's sandboxes are free. */
    readonly completed: Promise<void>,
  ) {}

  /** Closes every member (the server then sends group_complete). */
  async close(): Promise<void> {
    await Promise.all(this.members.map((m) => m.close()));
  }
}
