// Types of the client's API. Wire shapes are the protocol's generated types (protocol/src/generated/
// types.ts, written from protocol/schema): re-exported here, never copied, so the client cannot drift
// from the contract. Declared here is only what the client adds: generic observations, batch outcomes
// carrying SandgymError, and raw frame records.
import type {
  AdmittedEventDetails,
  QueuedEventDetails,
  ResetRequest,
  ResetResult as WireResetResult,
  StepResult as WireStepResult,
} from '#protocol/generated/types.js';

export type {
  AdmittedEventDetails,
  GroupCompleteEventDetails,
  GroupResult,
  QueuedEventDetails,
  BatchItem,
  Bound,
  Capabilities,
  EnvSpec,
  EventMessage as ServerEvent,
  HelloResult,
  Limits,
  RubricItem,
  SandboxInfo,
  ServerInfo,
  Space,
  Tasks,
  Tool,
} from '#protocol/generated/types.js';

/** The wire reset result with the observation typed as the caller's O. */
export type ResetResult<O = unknown> = Omit<WireResetResult, 'observation'> & { observation: O };

/** The wire step result with the observation typed as the caller's O. */
export type StepResult<O = unknown> = Omit<WireStepResult, 'observation'> & { observation: O };

/** The scheduling fields of make, reset and group (PROTOCOL.md §6a). */
export type SchedulingFields = Pick<ResetRequest, 'priority' | 'queue_timeout_ms' | 'preemptible'>;

/** The optional fields of a reset request (seed, options and the episode's scheduling fields). */
export type ResetParams = Pick<ResetRequest, 'seed' | 'options' | 'priority' | 'queue_timeout_ms' | 'preemptible'>;

/** What RequestOptions.onProgress hears while a request waits in the admission queue. */
export type QueueProgress = ({ event: 'queued'; session?: string } & QueuedEventDetails) | ({ event: 'admitted'; session?: string } & AdmittedEventDetails);

/** One outcome per batch item, in order. Errors are SandgymError instances like any other. */
export type BatchOutcome = { type: 'result'; result: Record<string, unknown> } | { type: 'error'; error: import('./errors.js').SandgymError };

/** A raw frame as seen by `onFrame` (the web inspector's frames pane). */
export interface FrameRecord {
  direction: 'sent' | 'received';
  /** Text frames are strings (JSON); binary frames are bytes (msgpack). */
  data: string | Uint8Array;
  /** The decoded message when decoding succeeded. */
  message?: unknown;
  at: number;
}
