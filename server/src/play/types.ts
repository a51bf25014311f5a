// What the play REPL and the inspector page add to the wire types. The wire types themselves (EnvSpec,
// Space, Tool, RubricItem, ResetResult, StepResult) are the protocol's generated ones, imported from
// protocol/src: a spec the server sends is used as is, without a local copy of its shape to drift.

import type { EnvSpec, Tool } from '#protocol/index.js';

/**
 * The subset of JSON Schema the shorthand, the help text and the forms read from a tool's parameters
 * (the wire types them as any object); anything else falls back to JSON.
 */
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

/** A tool's parameters as the JSON Schema subset above. */
export function paramsOf(tool: Tool): JsonSchema {
  return tool.parameters;
}

/**
 * Tools of an env: those of its tool_call action space (none for any other space). The spec's optional
 * `tools` is a copy of the same list for chat templates, so the action space is the one source read here.
 */
export function toolsOf(spec: EnvSpec): Tool[] {
  const space = spec.action_space;
  return space.type === 'tool_call' ? space.tools : [];
}
