// Result shapes the client hands back. Kept structural (not the generated protocol types) so that the
// client's public API stays stable while the schema grows optional fields.

export type Bound = number | 'inf' | '-inf';

/** A space as it travels on the wire (tagged union on `type`; see the protocol's space schema). */
export interface WireSpace {
  type: string;
  [key: string]: unknown;
}

export interface ToolSpec {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

export interface EnvSpec {
  id: string;
  description: string;
  observation_space: WireSpace;
  action_space: WireSpace;
  max_episode_steps: number | null;
  reward_range: [Bound, Bound];
  stochastic: boolean;
  kwargs_schema?: Record<string, unknown>;
  tools?: ToolSpec[];
  rubric?: { name: string; weight: number; description?: string }[];
  tasks?: { splits: Record<string, number> };
  sandbox?: Record<string, unknown>;
  [key: string]: unknown;
}

export interface ServerInfo {
  name: string;
  version: string;
}

export interface Limits {
  max_message_bytes: number;
  max_sessions: number;
  max_batch: number;
  step_timeout_ms: number;
  idle_timeout_ms: number;
  [key: string]: unknown;
}

export interface Capabilities {
  batch?: boolean;
  msgpack?: boolean;
  pipelining?: boolean;
  tool_call?: boolean;
  [key: string]: boolean | undefined;
}

export interface HelloResult {
  version: number;
  server: ServerInfo;
  capabilities: Capabilities;
  limits: Limits;
}

export interface ResetResult<O = unknown> {
  observation: O;
  info: Record<string, unknown>;
}

export interface StepResult<O = unknown> {
  observation: O;
  reward: number;
  terminated: boolean;
  truncated: boolean;
  info: Record<string, unknown>;
}

export interface ResetParams {
  seed?: number;
  options?: Record<string, unknown>;
}

export type BatchItem =
  | { type: 'reset'; session: string; seed?: number; options?: Record<string, unknown> }
  | { type: 'step'; session: string; action: unknown }
  | { type: 'close'; session: string };

/** One outcome per batch item, in order. Errors are SandgymError instances like any other. */
export type BatchOutcome =
  | { type: 'result'; result: Record<string, unknown> }
  | { type: 'error'; error: import('./errors.js').SandgymError };

/** A server-originated event frame (`session_closed`, `shutdown`, ...). */
export interface ServerEvent {
  type: 'event';
  event: string;
  session?: string;
  details?: Record<string, unknown>;
}

/** A raw frame as seen by `onFrame` (the web inspector's frames pane). */
export interface FrameRecord {
  direction: 'sent' | 'received';
  /** Text frames are strings (JSON); binary frames are bytes (msgpack). */
  data: string | Uint8Array;
  /** The decoded message when decoding succeeded. */
  message?: unknown;
  at: number;
}
