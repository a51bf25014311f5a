// Types of the client's API. Wire shapes are the protocol's generated types (protocol/src/generated/
// types.ts, written from protocol/schema): re-exported here, never copied, so the client cannot drift
// from the contract. Declared here is only what the client adds: generic observations, batch outcomes
// carrying SandgymError, and raw frame records.
import type {
  ResetRequest,
  ResetResult as WireResetResult,
  StepResult as WireStepResult,
} from '../../../protocol/src/generated/types.js';

export type {
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
} from '../../../protocol/src/generated/types.js';

/** The wire reset result with the observation typed as the caller's O. */
export type ResetResult<O = unknown> = Omit<WireResetResult, 'observation'> & { observation: O };

/** The wire step result with the observation typed as the caller's O. */
export type StepResult<O = unknown> = Omit<WireStepResult, 'observation'> & { observation: O };

/** The optional fields of a reset request. */
export type ResetParams = Pick<ResetRequest, 'seed' | 'options'>;

/** One outcome per batch item, in order. Errors are SandgymError instances like any other. */
export type BatchOutcome =
  | { type: 'result'; result: Record<string, unknown> }
  | { type: 'error'; error: import('./errors.js').SandgymError };

/** A raw frame as seen by `onFrame` (the web inspector's frames pane). */
export interface FrameRecord {
  direction: 'sent' | 'received';
  /** Text frames are strings (JSON); binary frames are bytes (msgpack). */
  data: string | Uint8Array;
  /** The decoded message when decoding succeeded. */
  message?: unknown;
  at: number;
}
