// Structural wire types the debugging tools need. Deliberately minimal and local: the play REPL and the
// inspector page only read these fields, and keeping them here means neither depends on how the
// protocol package spells its generated types (the wire shape is the contract, not a TS name).

export type Space = { type: string; [key: string]: unknown };

export interface ToolSpec {
  name: string;
  description?: string;
  parameters?: JsonSchema;
}

/** The subset of JSON Schema the form/shorthand generators understand; anything else falls back to JSON. */
export interface JsonSchema {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  enum?: unknown[];
  description?: string;
  default?: unknown;
  minimum?: number;
  maximum?: number;
  items?: JsonSchema;
  [key: string]: unknown;
}

export interface RubricItem {
  name: string;
  weight: number;
  description?: string;
}

export interface EnvSpec {
  id: string;
  description?: string;
  observation_space: Space;
  action_space: Space;
  max_episode_steps?: number | null;
  reward_range?: [number | string, number | string];
  stochastic?: boolean;
  kwargs_schema?: JsonSchema;
  tools?: ToolSpec[];
  rubric?: RubricItem[];
  tasks?: { splits: Record<string, number> };
  [key: string]: unknown;
}

export interface ResetReply {
  observation: unknown;
  info: Record<string, unknown>;
}

export interface StepReply {
  observation: unknown;
  reward: number;
  terminated: boolean;
  truncated: boolean;
  info: Record<string, unknown>;
}

/** Tools of an env: the spec's `tools` copy, else the tool_call action space's list. */
export function toolsOf(spec: EnvSpec): ToolSpec[] {
  if (Array.isArray(spec.tools)) return spec.tools;
  const space = spec.action_space;
  if (space.type === 'tool_call' && Array.isArray(space.tools)) return space.tools as ToolSpec[];
  return [];
}
