// reset / step / close of one session, with deadlines and the error mapping of the contract:
// env throws -> ENV_ERROR, SandboxFailure -> SANDBOX_ERROR, InvalidArgument -> INVALID_ARGUMENT
// (INVALID_ACTION from step), deadline -> TIMEOUT. The first three and TIMEOUT poison the session.
import { checkSpace } from '../../protocol/src/index.js';
import type { ResetResult, StepResult } from '../../envs/src/api.js';
import { DeadlineExceeded, withDeadline, type DeadlineSweeper } from './deadline.js';
import { err, isInvalidArgument, isSandboxFailure, ProtocolError, reasonOf } from './errors.js';
import type { Session, SessionRequest } from './session.js';

export interface OpLimits {
  step_timeout_ms: number;
  reset_timeout_ms: number;
  deadlines: DeadlineSweeper;
}

/** How long close waits for env.close() before giving up on it. */
const CLOSE_TIMEOUT_MS = 10_000;

export function runOp(s: Session, item: SessionRequest, limits: OpLimits): Promise<unknown> {
  if (s.state === 'closed') {
    if (item.type === 'close') return Promise.resolve({});
    return Promise.reject(err('UNKNOWN_SESSION', { session: s.id }, { reason: 'closed' }));
  }
  switch (item.type) {
    case 'step':
      return step(s, item.action, limits.step_timeout_ms, limits.deadlines);
    case 'reset':
      return reset(s, item.seed, item.options ?? {}, limits.reset_timeout_ms, limits.deadlines);
    case 'close':
      return closeSession(s).then(() => ({}));
  }
}

function resetNeeded(s: Session): ProtocolError {
  const reason =
    s.state === 'created'
      ? 'call reset before step'
      : s.state === 'needs_reset'
        ? 'the episode has ended'
        : `the session failed (${s.failReason}); reset or close it`;
  return err('RESET_NEEDED', { reason }, { reason, state: s.state });
}

async function step(s: Session, action: unknown, timeoutMs: number, deadlines: DeadlineSweeper): Promise<unknown> {
  if (s.state !== 'running') throw resetNeeded(s);
  const bad = checkSpace(s.env.def.action_space, action);
  if (bad) throw err('INVALID_ACTION', { path: bad.path, reason: bad.reason }, { path: bad.path, reason: bad.reason });
  let out: StepResult;
  try {
    out = await deadlines.race(s.instance.step(action), timeoutMs, 'step');
  } catch (e) {
    throw fail(s, e, 'step');
  }
  if ((s.state as string) === 'closed') throw err('UNKNOWN_SESSION', { session: s.id }, { reason: 'closed' });
  const problem = checkStepResult(out);
  if (problem) throw fail(s, new Error(problem), 'step');
  s.steps++;
  const max = s.env.def.max_episode_steps;
  // Gymnasium semantics: a step that terminates is not also a time-limit truncation, even when it
  // is the last allowed step (check_env rejects both flags on one step).
  const truncated = !out.terminated && (out.truncated === true || (max !== null && s.steps >= max));
  if (out.terminated || truncated) s.state = 'needs_reset';
  return { observation: out.observation, reward: out.reward, terminated: out.terminated, truncated, info: out.info ?? {} };
}

function checkStepResult(out: StepResult): string | null {
  if (typeof out !== 'object' || out === null) return 'step returned no result object';
  if (typeof out.reward !== 'number' || !Number.isFinite(out.reward)) return `step returned a non-finite reward (${String(out.reward)})`;
  if (typeof out.terminated !== 'boolean') return 'step returned a non-boolean terminated';
  if (out.truncated !== undefined && typeof out.truncated !== 'boolean') return 'step returned a non-boolean truncated';
  if (out.observation === undefined) return 'step returned no observation';
  if (out.info !== undefined && (typeof out.info !== 'object' || out.info === null || Array.isArray(out.info))) return 'step returned a non-object info';
  return null;
}

async function reset(s: Session, seed: number | undefined, options: Record<string, unknown>, timeoutMs: number, deadlines: DeadlineSweeper): Promise<unknown> {
  let out: ResetResult;
  try {
    const prior = s.straggler;
    const call = prior ? prior.then(() => s.instance.reset(seed, options)) : s.instance.reset(seed, options);
    out = await deadlines.race(call, timeoutMs, 'reset');
  } catch (e) {
    if (isInvalidArgument(e)) throw err('INVALID_ARGUMENT', { path: e.path || '/', reason: e.message }, { path: e.path, reason: e.message });
    throw fail(s, e, 'reset');
  }
  if ((s.state as string) === 'closed') throw err('UNKNOWN_SESSION', { session: s.id }, { reason: 'closed' });
  if (typeof out !== 'object' || out === null || out.observation === undefined) throw fail(s, new Error('reset returned no observation'), 'reset');
  if (out.info !== undefined && (typeof out.info !== 'object' || out.info === null)) throw fail(s, new Error('reset returned a non-object info'), 'reset');
  s.straggler = null;
  s.steps = 0;
  s.state = 'running';
  s.failReason = '';
  return { observation: out.observation, info: out.info ?? {} };
}

/** Map an env failure to its protocol error and poison the session (except INVALID_ACTION). */
function fail(s: Session, e: unknown, op: 'step' | 'reset'): ProtocolError {
  if (op === 'step' && isInvalidArgument(e)) {
    const path = e.path;
    return err('INVALID_ACTION', { path: path || '/', reason: e.message }, { path, reason: e.message });
  }
  let pe: ProtocolError;
  if (e instanceof DeadlineExceeded) {
    s.straggler = e.straggler;
    pe = err('TIMEOUT', { op, timeout_ms: e.timeoutMs }, { timeout_ms: e.timeoutMs });
    s.logger.warn({ session: s.id, env: s.env.def.id, op, timeout_ms: e.timeoutMs }, 'session timed out');
  } else if (isSandboxFailure(e)) {
    pe = err('SANDBOX_ERROR', { reason: reasonOf(e) }, { reason: reasonOf(e) });
    s.logger.warn({ session: s.id, env: s.env.def.id, op, reason: reasonOf(e) }, 'session sandbox failed');
  } else {
    pe = err('ENV_ERROR', { reason: reasonOf(e) }, { reason: reasonOf(e) });
    s.logger.warn({ session: s.id, env: s.env.def.id, op, err: e }, 'session env error');
  }
  if (s.state !== 'closed') {
    s.state = 'failed';
    s.failReason = pe.code;
  }
  return pe;
}

/**
 * Close the env: abort its signal first (so a hung step can stop), then env.close() bounded by a
 * deadline, then release its sandboxes. Idempotent; never throws.
 */
export async function closeSession(s: Session): Promise<void> {
  if (s.state === 'closed') return;
  s.state = 'closed';
  s.abort.abort();
  try {
    await withDeadline(Promise.resolve().then(() => s.instance.close()), CLOSE_TIMEOUT_MS, 'close');
  } catch (e) {
    s.logger.warn({ session: s.id, env: s.env.def.id, err: e }, 'env close failed');
  }
  if (s.sandboxes) {
    try {
      await s.sandboxes.releaseAll();
    } catch (e) {
      s.logger.warn({ session: s.id, err: e }, 'sandbox release failed');
    }
  }
}
