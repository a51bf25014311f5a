// What a request carries besides its fields, shared by the client and the handles built on it
// (EnvHandle, EnvGroup). Kept apart from client.ts so the handles depend on this and on the
// SessionRequester interface, not on the client class (no client ⇄ env-handle circle).
import type { QueueProgress, SchedulingFields } from './types.js';

export interface RequestOptions {
  /** Overrides the client's requestTimeoutMs for this request; 0 disables the deadline. */
  timeoutMs?: number;
  /**
   * Told where the request stands while it waits in the server's admission queue (`queued`: position,
   * units ahead, estimated wait; then `admitted`). PROTOCOL.md §6a. A request admitted at once hears nothing.
   */
  onProgress?: (progress: QueueProgress) => void;
}

/** What a session handle needs of its client (SandgymClient implements it). */
export interface SessionRequester {
  request<T = Record<string, unknown>>(type: string, params?: Record<string, unknown>, opts?: RequestOptions): Promise<T>;
}

/** The scheduling fields of make/reset/group that are set (PROTOCOL.md §6a). */
export function schedulingFields(o: SchedulingFields | undefined): SchedulingFields {
  const out: SchedulingFields = {};
  if (o?.priority !== undefined) out.priority = o.priority;
  if (o?.queue_timeout_ms !== undefined) out.queue_timeout_ms = o.queue_timeout_ms;
  if (o?.preemptible !== undefined) out.preemptible = o.preemptible;
  return out;
}
