// One env session: its state machine and its FIFO queue. Requests for a session run strictly in
// order; different sessions run concurrently (each has its own queue).
import type { FastifyBaseLogger } from 'fastify';
import type { EnvInstance } from '../../envs/src/api.js';
import type { RegisteredEnv } from '../../envs/src/registry.js';
import type { SessionSandboxes } from './sandbox-adapter.js';

/** created -> running -> needs_reset (episode over) ; failed (TIMEOUT/ENV_ERROR/SANDBOX_ERROR) ; closed. */
export type SessionState = 'created' | 'running' | 'needs_reset' | 'failed' | 'closed';

/** A reply target: a standalone request (batch null) or one slot of a batch. */
export interface BatchCollector {
  id: number;
  binary: boolean;
  results: unknown[];
  remaining: number;
}

export interface Job {
  /** The request (or batch item): type + session + params. */
  item: SessionRequest;
  id: number;
  binary: boolean;
  batch: BatchCollector | null;
  index: number;
}

export interface SessionRequest {
  type: 'reset' | 'step' | 'close';
  session: string;
  action?: unknown;
  seed?: number;
  options?: Record<string, unknown>;
}

export class Session {
  state: SessionState = 'created';
  /** Steps taken in the current episode (for server-enforced truncation). */
  steps = 0;
  lastActive = Date.now();
  readonly queue: Job[] = [];
  busy = false;
  /** Why the session failed (reported in RESET_NEEDED). */
  failReason = '';
  /**
   * A timed-out env call that may still be running. Its late result is discarded, and the next
   * reset waits for it (within its own deadline) so the env never sees two calls at once.
   */
  straggler: Promise<unknown> | null = null;

  constructor(
    readonly id: string,
    readonly env: RegisteredEnv,
    readonly instance: EnvInstance,
    readonly abort: AbortController,
    readonly logger: FastifyBaseLogger,
    readonly sandboxes: SessionSandboxes | null,
  ) {}

  /** Idle means nothing queued or running; only idle sessions are reaped. */
  isIdleSince(cutoff: number): boolean {
    return !this.busy && this.queue.length === 0 && this.lastActive < cutoff;
  }
}
