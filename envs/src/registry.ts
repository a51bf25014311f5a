// Env registry: definitions are checked and their kwargs schemas compiled once, at registration,
// so `make` never compiles a schema.
import type { ValidateFunction } from 'ajv';
import { compileUserSchema, validateSpaceDefinition, type EnvSpec } from '#protocol/index.js';
import type { EnvDefinition } from './api.js';

export interface RegisteredEnv {
  def: EnvDefinition;
  /** The env's kwargs_schema, compiled; without one, NO_KWARGS (an env that declares no kwargs takes none). */
  validateKwargs: ValidateFunction;
  /** The wire env_spec, built once. */
  spec: EnvSpec;
}

export class EnvDefinitionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'EnvDefinitionError';
  }
}

function fail(id: unknown, reason: string): never {
  throw new EnvDefinitionError(`invalid env definition${typeof id === 'string' ? ` '${id}'` : ''}: ${reason}`);
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

const isBound = (b: unknown) => (typeof b === 'number' && Number.isFinite(b)) || b === 'inf' || b === '-inf';

/** Structural check of a definition; throws EnvDefinitionError naming the bad field. */
export function checkDefinition(def: unknown): asserts def is EnvDefinition {
  if (!isObject(def)) fail(undefined, 'not an object');
  const id = def.id;
  if (typeof id !== 'string' || !/^[A-Za-z0-9_.\-/]{1,128}$/.test(id)) fail(id, 'id must be a string of [A-Za-z0-9_.-/] (1..128 chars)');
  if (typeof def.description !== 'string') fail(id, 'description must be a string');
  if (!isObject(def.observation_space) || typeof def.observation_space.type !== 'string') fail(id, 'observation_space must be a space object');
  if (!isObject(def.action_space) || typeof def.action_space.type !== 'string') fail(id, 'action_space must be a space object');
  for (const key of ['observation_space', 'action_space'] as const) {
    const bad = validateSpaceDefinition(def[key]);
    if (bad) fail(id, `${key}${bad.path}: ${bad.reason}`);
  }
  const m = def.max_episode_steps;
  if (m !== null && !(Number.isInteger(m) && (m as number) >= 1)) fail(id, 'max_episode_steps must be a positive integer or null');
  if (typeof def.create !== 'function') fail(id, 'create must be a function');
  if (def.reward_range !== undefined) {
    const r = def.reward_range;
    if (!Array.isArray(r) || r.length !== 2 || !isBound(r[0]) || !isBound(r[1])) fail(id, 'reward_range must be [lo, hi] (numbers or "inf"/"-inf")');
  }
  if (def.stochastic !== undefined && typeof def.stochastic !== 'boolean') fail(id, 'stochastic must be a boolean');
  if (def.kwargs_schema !== undefined && !isObject(def.kwargs_schema)) fail(id, 'kwargs_schema must be a JSON Schema object');
  if (def.rubric !== undefined) {
    if (!Array.isArray(def.rubric)) fail(id, 'rubric must be an array');
    for (const item of def.rubric) {
      if (!isObject(item) || typeof item.name !== 'string' || typeof item.weight !== 'number') fail(id, 'rubric items need name (string) and weight (number)');
    }
  }
  if (def.sandbox !== undefined && (!isObject(def.sandbox) || typeof def.sandbox.image !== 'string')) fail(id, 'sandbox must be {image: string, ...}');
}

function buildSpec(def: EnvDefinition): EnvSpec {
  const spec: EnvSpec = {
    id: def.id,
    description: def.description,
    observation_space: def.observation_space,
    action_space: def.action_space,
    max_episode_steps: def.max_episode_steps,
    reward_range: def.reward_range ?? ['-inf', 'inf'],
    stochastic: def.stochastic ?? false,
  };
  if (def.kwargs_schema) spec.kwargs_schema = def.kwargs_schema;
  if (def.action_space.type === 'tool_call' && def.action_space.tools) spec.tools = def.action_space.tools;
  if (def.rubric) spec.rubric = def.rubric;
  if (def.tasks) spec.tasks = def.tasks;
  // The wire SandboxInfo is closed: image + limits only (workspace is an env-side detail).
  if (def.sandbox) spec.sandbox = { image: def.sandbox.image, limits: { ...(def.sandbox.limits ?? {}) } };
  return spec;
}

/**
 * The kwargs validator of an env without kwargs_schema: unknown kwargs are refused (INVALID_ARGUMENT
 * naming the key) rather than silently ignored, the same rule as reset options (envs/src/options.ts).
 * Compiled lazily, once per process: only a registry with such an env pays for it.
 */
let noKwargs: ValidateFunction | undefined;
function noKwargsValidator(): ValidateFunction {
  noKwargs ??= compileUserSchema({ type: 'object', properties: {}, additionalProperties: false });
  return noKwargs;
}

export class EnvRegistry {
  private readonly envs = new Map<string, RegisteredEnv>();

  register(def: EnvDefinition): RegisteredEnv {
    checkDefinition(def);
    if (this.envs.has(def.id)) throw new EnvDefinitionError(`env '${def.id}' is already registered`);
    let validateKwargs: ValidateFunction;
    if (!def.kwargs_schema) validateKwargs = noKwargsValidator();
    else {
      try {
        validateKwargs = compileUserSchema(def.kwargs_schema);
      } catch (err) {
        fail(def.id, `kwargs_schema does not compile: ${(err as Error).message}`);
      }
    }
    const entry: RegisteredEnv = { def, validateKwargs, spec: buildSpec(def) };
    this.envs.set(def.id, entry);
    return entry;
  }

  registerAll(defs: Iterable<EnvDefinition>): void {
    for (const d of defs) this.register(d);
  }

  get(id: string): RegisteredEnv | undefined {
    return this.envs.get(id);
  }

  has(id: string): boolean {
    return this.envs.has(id);
  }

  list(): RegisteredEnv[] {
    return [...this.envs.values()];
  }

  specs(): EnvSpec[] {
    return this.list().map((e) => e.spec);
  }
}
