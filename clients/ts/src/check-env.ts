// Env checker over the wire, in the spirit of Gymnasium's check_env and dm_env_rpc's compliance
// tests: it drives a live server like a trainer would and reports each property as a named
// pass/fail with a detail, so an env author sees every problem at once rather than the first.

import { checkSpace, makeInvalidSamples, mulberry32, sampleSpace, validateEnvSpec, validateResult } from '#protocol/index.js';
import { connect, type ConnectOptions, type Encoding, type SandgymClient } from './client.js';
import type { EnvHandle } from './env-handle.js';
import { SandgymError } from './errors.js';
import type { WebSocketCtor } from './socket.js';
import type { ToolCallSpace } from '#protocol/index.js';
import type { EnvSpec, StepResult, Tool } from './types.js';

export interface CheckEnvOptions {
  token?: string;
  encoding?: Encoding;
  /** Base seed for resets and for sampling actions. Default 0. */
  seed?: number;
  /** make kwargs for every session the checker opens. */
  kwargs?: Record<string, unknown>;
  requestTimeoutMs?: number;
  /** Step cap for rollouts of envs without max_episode_steps. Default 50. */
  maxRolloutSteps?: number;
  WebSocket?: WebSocketCtor;
}

export interface CheckResult {
  name: string;
  ok: boolean;
  /** Passed vacuously: the property does not apply to this env (e.g. seeds differ for a deterministic env). */
  skipped?: boolean;
  detail: string;
}

export interface CheckReport {
  env_id: string;
  url: string;
  ok: boolean;
  passed: number;
  failed: number;
  skipped: number;
  duration_ms: number;
  checks: CheckResult[];
}

type Check = (ctx: CheckContext) => Promise<Outcome>;
type Outcome = { ok: boolean; detail: string; skipped?: boolean };

/** What every check gets; the spec check runs before there is a spec. */
interface SessionContext {
  client: SandgymClient;
  envId: string;
  opts: Required<Pick<CheckEnvOptions, 'seed' | 'maxRolloutSteps'>> & CheckEnvOptions;
  /** Sessions opened by checks, closed at the end whatever happens. */
  handles: EnvHandle[];
}

/** The context of the checks after the spec check: the spec make returned. */
interface CheckContext extends SessionContext {
  spec: EnvSpec;
  semantics: Semantics;
}

/**
 * The env-semantics rules (envs/README.md, "Episode semantics") checked on every step any check runs:
 * the step results the checks see anyway are the sample, so no rule needs episodes of its own.
 */
interface Semantics {
  steps: number;
  problems: string[];
  /** Per session: steps since its last reset and the episode's step cap from the reset's info.max_steps. */
  episodes: WeakMap<EnvHandle, { steps: number; ownCap: number | null }>;
}

/** Absolute tolerance of Σ reward_components = reward (float sums of weighted parts). */
const SUM_TOLERANCE = 1e-6;

/** Runs every check against `envId` on the server at `url`. Never throws for env faults: they are failures in the report. */
export async function checkEnv(url: string, envId: string, options: CheckEnvOptions = {}): Promise<CheckReport> {
  const started = now();
  const opts = { seed: 0, maxRolloutSteps: 50, ...options };
  const checks: CheckResult[] = [];
  const report = (): CheckReport => {
    const failed = checks.filter((c) => !c.ok).length;
    const skipped = checks.filter((c) => c.ok && c.skipped).length;
    return { env_id: envId, url, ok: failed === 0, passed: checks.length - failed, failed, skipped, duration_ms: Math.round(now() - started), checks };
  };
  let client: SandgymClient;
  try {
    const connectOpts: ConnectOptions = { encoding: opts.encoding ?? 'json', requestTimeoutMs: opts.requestTimeoutMs ?? 30_000, clientName: 'sandgym-check' };
    if (opts.token !== undefined) connectOpts.token = opts.token;
    if (opts.WebSocket) connectOpts.WebSocket = opts.WebSocket;
    client = await connect(url, connectOpts);
  } catch (err) {
    checks.push({ name: 'connect', ok: false, detail: describeError(err) });
    return report();
  }
  const base: SessionContext = { client, envId, opts, handles: [] };
  try {
    let spec: EnvSpec | undefined;
    const specOutcome = await run(() => checkSpec(base, envId, (s) => (spec = s)));
    checks.push({ name: 'spec', ...specOutcome });
    if (!specOutcome.ok || spec === undefined) return report();
    const ctx: CheckContext = { ...base, spec, semantics: { steps: 0, problems: [], episodes: new WeakMap() } };
    for (const [name, check] of CHECKS) {
      checks.push({ name, ...(await run(() => check(ctx))) });
      // Each check's sessions go before the next opens more, so per-connection caps never bite.
      await closeAll(ctx);
    }
    checks.push({ name: 'step_semantics', ...stepSemantics(ctx) });
  } finally {
    await closeAll(base);
    await client.close().catch(() => undefined);
  }
  return report();
}

async function closeAll(ctx: SessionContext): Promise<void> {
  const handles = ctx.handles.splice(0);
  await Promise.allSettled(handles.map((h) => h.close({ timeoutMs: 5_000 })));
}

async function run(check: () => Promise<Outcome>): Promise<Outcome> {
  try {
    return await check();
  } catch (err) {
    return { ok: false, detail: `unexpected error: ${describeError(err)}` };
  }
}

async function checkSpec(ctx: SessionContext, envId: string, gotSpec: (spec: EnvSpec) => void): Promise<Outcome> {
  const listed = (await ctx.client.listEnvs()).find((e) => e.id === envId);
  const handle = await open(ctx);
  const spec = handle.spec;
  gotSpec(spec);
  const problems: string[] = [];
  if (!listed) problems.push(`'${envId}' is not in list_envs`);
  if (spec.id !== envId) problems.push(`make returned spec for '${spec.id}'`);
  if (!isObject(spec.observation_space) || typeof spec.observation_space.type !== 'string') problems.push('observation_space missing');
  if (!isObject(spec.action_space) || typeof spec.action_space.type !== 'string') problems.push('action_space missing');
  if (!(spec.max_episode_steps === null || (Number.isInteger(spec.max_episode_steps) && spec.max_episode_steps > 0)))
    problems.push(`max_episode_steps ${String(spec.max_episode_steps)} is not a positive integer or null`);
  if (typeof spec.stochastic !== 'boolean') problems.push('stochastic is not a boolean');
  if (!Array.isArray(spec.reward_range) || spec.reward_range.length !== 2) problems.push('reward_range is not a pair');
  if (listed && canonical(listed) !== canonical(spec)) problems.push('list_envs and make disagree on the spec');
  const schema = validateEnvSpec(spec);
  if (!schema.ok) problems.push(`env_spec violates the protocol schema: ${schema.error.message}`);
  return problems.length
    ? { ok: false, detail: problems.join('; ') }
    : {
        ok: true,
        detail: `${spec.action_space.type} actions, ${spec.observation_space.type} observations, max_episode_steps ${String(spec.max_episode_steps)}`,
      };
}

const CHECKS: [string, Check][] = [
  ['reset_observation_in_space', resetInSpace],
  ['seeded_reset_deterministic', seededResetDeterministic],
  ['seeded_rollout_deterministic', seededRolloutDeterministic],
  ['different_seeds_differ', differentSeedsDiffer],
  ['step_before_reset_needs_reset', stepBeforeReset],
  ['invalid_actions_rejected', invalidActionsRejected],
  ['valid_action_steps', validActionSteps],
  ['episode_ends_within_limit', episodeEnds],
  ['submit_ends_episode', submitEndsEpisode],
  ['unknown_arguments_refused', unknownArgumentsRefused],
  ['close_idempotent', closeIdempotent],
];

/** Resets through the checker so the step rules know where the episode starts and its own step cap. */
async function reset(ctx: CheckContext, h: EnvHandle, params: { seed?: number; options?: Record<string, unknown> }) {
  const r = await h.reset(params);
  const cap = isObject(r.info) ? r.info.max_steps : undefined;
  ctx.semantics.episodes.set(h, { steps: 0, ownCap: typeof cap === 'number' && Number.isInteger(cap) && cap > 0 ? cap : null });
  return r;
}

/** Steps through the checker: every result is held to the step rules. */
async function step(ctx: CheckContext, h: EnvHandle, action: unknown): Promise<StepResult> {
  const r = await h.step(action as never);
  observeStep(ctx, h, action, r);
  return r;
}

function observeStep(ctx: CheckContext, h: EnvHandle, action: unknown, r: StepResult): void {
  const sem = ctx.semantics;
  sem.steps++;
  const ep = sem.episodes.get(h);
  if (ep) ep.steps++;
  const at = `step ${ep ? ep.steps : '?'} (${preview(action)})`;
  const problem = (p: string) => {
    if (sem.problems.length < 20) sem.problems.push(`${at}: ${p}`);
  };
  // reward_components are the weighted contributions: they add up to the step's reward.
  const components = isObject(r.info) ? r.info.reward_components : undefined;
  if (components === undefined) {
    if (ctx.spec.rubric?.length) problem('no info.reward_components although the env declares a rubric');
  } else if (isObject(components) && Object.values(components).every((v) => typeof v === 'number' && Number.isFinite(v))) {
    const sum = Object.values(components as Record<string, number>).reduce((a, b) => a + b, 0);
    if (typeof r.reward === 'number' && Math.abs(sum - r.reward) > SUM_TOLERANCE) {
      problem(`reward_components sum to ${sum}, reward is ${r.reward}: components must be the weighted contributions that sum to the reward`);
    }
  }
  // Only a step cap truncates: an end by the env's own rules (a lost game) is terminated.
  if (r.truncated && !r.terminated && ep) {
    const caps = [ctx.spec.max_episode_steps, ep.ownCap].filter((c): c is number => typeof c === 'number');
    if (!caps.includes(ep.steps)) {
      problem(
        `truncated at step ${ep.steps}, which is no step cap (max_episode_steps ${String(ctx.spec.max_episode_steps)}${ep.ownCap !== null ? `, reset info.max_steps ${ep.ownCap}` : ''}): an end by the env's rules is terminated`,
      );
    }
  }
  // With a submit tool the agent ends the episode: submitting ends it.
  if (isObject(action) && action.name === 'submit' && submitTool(ctx.spec) && !r.terminated) problem('a submit call did not terminate the episode');
}

function stepSemantics(ctx: CheckContext): Outcome {
  const sem = ctx.semantics;
  if (sem.problems.length)
    return {
      ok: false,
      detail: `${sem.problems.length}${sem.problems.length >= 20 ? '+' : ''} problem(s) over ${sem.steps} steps: ${sem.problems.slice(0, 5).join('; ')}`,
    };
  return {
    ok: true,
    detail: `${sem.steps} steps of the checks above: reward_components sum to the reward, truncated only at a step cap, submit ends the episode`,
  };
}

function toolsOf(spec: EnvSpec): Tool[] {
  const space = spec.action_space;
  return space.type === 'tool_call' && Array.isArray(space.tools) ? (space as ToolCallSpace).tools : [];
}

function submitTool(spec: EnvSpec): Tool | undefined {
  return toolsOf(spec).find((t) => t.name === 'submit');
}

async function submitEndsEpisode(ctx: CheckContext): Promise<Outcome> {
  const tool = submitTool(ctx.spec);
  if (!tool) return { ok: true, skipped: true, detail: 'no submit tool' };
  const h = await open(ctx);
  const rng = mulberry32(ctx.opts.seed + 19);
  await reset(ctx, h, { seed: ctx.opts.seed });
  // One other action first when there is one (the episode is under way), then a sampled submit call.
  const [other, ...rest] = toolsOf(ctx.spec).filter((t) => t.name !== 'submit');
  if (other && (ctx.spec.max_episode_steps ?? 2) >= 2) {
    const first = await step(ctx, h, sampleSpace({ type: 'tool_call', tools: [other, ...rest] }, rng));
    if (first.terminated || first.truncated) await reset(ctx, h, { seed: ctx.opts.seed });
  }
  const r = await step(ctx, h, sampleSpace({ type: 'tool_call', tools: [tool] }, rng));
  return r.terminated
    ? { ok: true, detail: `submit -> terminated (reward ${r.reward})` }
    : { ok: false, detail: `submit did not terminate the episode (terminated ${String(r.terminated)}, truncated ${String(r.truncated)})` };
}

/** A name no env declares: unknown make kwargs and reset options must be refused, not ignored. */
const UNKNOWN_KEY = 'sandgym_check_unknown';

async function unknownArgumentsRefused(ctx: CheckContext): Promise<Outcome> {
  const problems: string[] = [];
  try {
    const h = await ctx.client.make(ctx.envId, { ...(ctx.opts.kwargs ?? {}), [UNKNOWN_KEY]: true });
    ctx.handles.push(h);
    problems.push(`make accepted the unknown kwarg '${UNKNOWN_KEY}'`);
  } catch (err) {
    if (!(err instanceof SandgymError) || err.code !== 'INVALID_ARGUMENT')
      problems.push(`make with an unknown kwarg: expected INVALID_ARGUMENT, got ${describeError(err)}`);
  }
  const h = await open(ctx);
  const refused = await expectError(
    () => h.reset({ seed: ctx.opts.seed, options: { [UNKNOWN_KEY]: true } }),
    'INVALID_ARGUMENT',
    `reset with the unknown option '${UNKNOWN_KEY}'`,
  );
  if (!refused.ok) problems.push(refused.detail);
  // The refusal loses nothing: the same session resets normally afterwards.
  await h.reset({ seed: ctx.opts.seed });
  return problems.length
    ? { ok: false, detail: problems.join('; ') }
    : { ok: true, detail: `unknown kwarg and reset option '${UNKNOWN_KEY}' -> INVALID_ARGUMENT; session still resets` };
}

async function resetInSpace(ctx: CheckContext): Promise<Outcome> {
  const h = await open(ctx);
  const problems: string[] = [];
  for (const seed of [ctx.opts.seed, ctx.opts.seed + 1, undefined]) {
    const r = await ctx.client.request<{ observation: unknown; info: unknown }>(
      'reset',
      seed === undefined ? { session: h.session } : { session: h.session, seed },
    );
    const schema = validateResult('reset', r);
    if (!schema.ok) problems.push(`seed ${String(seed)}: reset result violates the protocol schema: ${schema.error.message}`);
    const bad = checkSpace(ctx.spec.observation_space, r.observation);
    if (bad) problems.push(`seed ${String(seed)}: observation not in space at ${bad.path}: ${bad.reason}`);
    if (!isObject(r.info)) problems.push(`seed ${String(seed)}: info is not an object`);
  }
  return problems.length ? { ok: false, detail: problems.join('; ') } : { ok: true, detail: 'observations of 3 resets lie in the observation space' };
}

async function seededResetDeterministic(ctx: CheckContext): Promise<Outcome> {
  const [a, b] = [await open(ctx), await open(ctx)];
  const seed = ctx.opts.seed;
  const first = stripVolatile(await reset(ctx, a, { seed }));
  const other = stripVolatile(await reset(ctx, b, { seed }));
  // Same session again, after its state moved on: a reset must not depend on history.
  await stepAny(ctx, a, 1);
  const again = stripVolatile(await reset(ctx, a, { seed }));
  const diffs: string[] = [];
  if (canonical(first) !== canonical(other)) diffs.push(`two sessions differ: ${preview(first)} vs ${preview(other)}`);
  if (canonical(first) !== canonical(again)) diffs.push(`same session differs after stepping: ${preview(first)} vs ${preview(again)}`);
  return diffs.length
    ? { ok: false, detail: `reset(seed=${seed}) is not reproducible: ${diffs.join('; ')}` }
    : { ok: true, detail: `reset(seed=${seed}) identical across sessions and repeats` };
}

async function seededRolloutDeterministic(ctx: CheckContext): Promise<Outcome> {
  const steps = Math.min(ctx.spec.max_episode_steps ?? 5, 5);
  const rng = mulberry32(ctx.opts.seed + 7);
  const actions = Array.from({ length: steps }, () => sampleSpace(ctx.spec.action_space, rng));
  const rollout = async () => {
    const h = await open(ctx);
    const out: unknown[] = [stripVolatile(await reset(ctx, h, { seed: ctx.opts.seed }))];
    for (const action of actions) {
      const r = await step(ctx, h, action);
      out.push(stripVolatile(r));
      if (r.terminated || r.truncated) break;
    }
    return out;
  };
  const [x, y] = [await rollout(), await rollout()];
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    if (canonical(x[i]) !== canonical(y[i]))
      return { ok: false, detail: `transition ${i} differs with the same seed and actions: ${preview(x[i])} vs ${preview(y[i])}` };
  }
  return { ok: true, detail: `${x.length - 1} step(s) identical across two sessions with seed ${ctx.opts.seed}` };
}

async function differentSeedsDiffer(ctx: CheckContext): Promise<Outcome> {
  if (!ctx.spec.stochastic) return { ok: true, skipped: true, detail: 'env declares stochastic: false' };
  const h = await open(ctx);
  const seeds = Array.from({ length: 8 }, (_, i) => ctx.opts.seed + 1000 + i);
  const resets = new Set<string>();
  for (const seed of seeds) resets.add(canonical(stripVolatile(await reset(ctx, h, { seed }))));
  if (resets.size > 1) return { ok: true, detail: `${resets.size} distinct resets over ${seeds.length} seeds` };
  // Same first observation for every seed is legitimate (a bandit); the randomness must then show in the dynamics.
  const steps = Math.min(ctx.spec.max_episode_steps ?? 3, 3);
  const rng = mulberry32(ctx.opts.seed + 17);
  const actions = Array.from({ length: steps }, () => sampleSpace(ctx.spec.action_space, rng));
  const rollouts = new Set<string>();
  for (const seed of seeds) {
    await reset(ctx, h, { seed });
    const trace: unknown[] = [];
    for (const action of actions) {
      const r = await step(ctx, h, action);
      trace.push(stripVolatile(r));
      if (r.terminated || r.truncated) break;
    }
    rollouts.add(canonical(trace));
  }
  return rollouts.size > 1
    ? { ok: true, detail: `resets identical, but ${rollouts.size} distinct ${steps}-step rollouts over ${seeds.length} seeds` }
    : { ok: false, detail: `env declares stochastic: true but ${seeds.length} different seeds gave identical resets and ${steps}-step rollouts` };
}

async function stepBeforeReset(ctx: CheckContext): Promise<Outcome> {
  const h = await open(ctx);
  const action = sampleSpace(ctx.spec.action_space, mulberry32(ctx.opts.seed));
  return expectError(() => h.step(action), 'RESET_NEEDED', 'step before the first reset');
}

async function invalidActionsRejected(ctx: CheckContext): Promise<Outcome> {
  const samples = normalizeInvalid(makeInvalidSamples(ctx.spec.action_space));
  if (samples.length === 0) return { ok: true, skipped: true, detail: 'the action space admits no invalid samples' };
  const h = await open(ctx);
  await reset(ctx, h, { seed: ctx.opts.seed });
  const problems: string[] = [];
  for (const { label, value } of samples) {
    try {
      const r = await step(ctx, h, value);
      problems.push(`${label}: accepted (${preview(value)} -> reward ${r.reward})`);
      if (r.terminated || r.truncated) await reset(ctx, h, { seed: ctx.opts.seed });
    } catch (err) {
      if (!(err instanceof SandgymError) || err.code !== 'INVALID_ACTION') problems.push(`${label}: expected INVALID_ACTION, got ${describeError(err)}`);
      else if (typeof err.details?.path !== 'string' || typeof err.details?.reason !== 'string')
        problems.push(`${label}: INVALID_ACTION without details.path/reason`);
      if (err instanceof SandgymError && err.code === 'CONNECTION_CLOSED') break;
    }
  }
  // The session must survive every rejection: valid actions still step, and the rejected ones did not
  // count toward max_episode_steps (the episode is not truncated before `limit` valid steps).
  const limit = ctx.spec.max_episode_steps;
  const rng = mulberry32(ctx.opts.seed + 3);
  try {
    for (let valid = 1; valid <= (limit ?? 1); valid++) {
      const r = await step(ctx, h, sampleSpace(ctx.spec.action_space, rng));
      if (r.terminated) break;
      if (r.truncated) {
        if (limit !== null && valid < limit)
          problems.push(`truncated after ${valid} valid steps (limit ${limit}): rejected actions counted toward max_episode_steps`);
        break;
      }
    }
  } catch (err) {
    problems.push(`session did not survive invalid actions: valid step failed with ${describeError(err)}`);
  }
  return problems.length
    ? {
        ok: false,
        detail: `${problems.length} of ${samples.length} invalid actions mishandled: ${problems.slice(0, 5).join('; ')}${problems.length > 5 ? '; ...' : ''}`,
      }
    : {
        ok: true,
        detail: `${samples.length} invalid actions got INVALID_ACTION (${samples
          .map((s) => s.label)
          .slice(0, 6)
          .join(', ')}${samples.length > 6 ? ', ...' : ''}); session survived`,
      };
}

async function validActionSteps(ctx: CheckContext): Promise<Outcome> {
  const h = await open(ctx);
  const rng = mulberry32(ctx.opts.seed + 11);
  await reset(ctx, h, { seed: ctx.opts.seed });
  const problems: string[] = [];
  const n = Math.min(ctx.spec.max_episode_steps ?? 10, 10);
  let stepped = 0;
  for (let i = 0; i < n; i++) {
    const action = sampleSpace(ctx.spec.action_space, rng);
    // Raw request, not h.step: the handle normalises results and would hide extra or missing fields.
    const r = await ctx.client.request<StepResult>('step', { session: h.session, action });
    observeStep(ctx, h, action, r);
    stepped++;
    const schema = validateResult('step', r);
    if (!schema.ok) problems.push(`step ${i + 1}: result violates the protocol schema: ${schema.error.message}`);
    problems.push(...wellFormed(ctx.spec, r).map((p) => `step ${i + 1} (${preview(action)}): ${p}`));
    if (r.terminated || r.truncated) break;
  }
  return problems.length
    ? { ok: false, detail: problems.slice(0, 5).join('; ') }
    : { ok: true, detail: `${stepped} sampled action(s) stepped; results well-formed and in space` };
}

/** Up to this many rollouts look for one that reaches max_episode_steps (sampled actions may end episodes early). */
const ROLLOUTS_FOR_LIMIT = 5;

async function episodeEnds(ctx: CheckContext): Promise<Outcome> {
  const h = await open(ctx);
  const limit = ctx.spec.max_episode_steps;
  const cap = limit ?? ctx.opts.maxRolloutSteps;
  const endings: string[] = [];
  let reachedLimit = false;
  for (let attempt = 0; attempt < ROLLOUTS_FOR_LIMIT && !reachedLimit; attempt++) {
    const rng = mulberry32(ctx.opts.seed + 13 + attempt);
    await reset(ctx, h, { seed: ctx.opts.seed + attempt });
    let last: StepResult | undefined;
    let steps = 0;
    while (steps < cap) {
      last = await step(ctx, h, sampleSpace(ctx.spec.action_space, rng));
      steps++;
      if (last.terminated || last.truncated) break;
    }
    const ended = !!last && (last.terminated || last.truncated);
    if (limit === null) {
      if (!ended) return { ok: true, skipped: true, detail: `no max_episode_steps; ${steps} steps without an end` };
    } else if (!ended) {
      return { ok: false, detail: `no terminated/truncated after max_episode_steps=${limit} steps` };
    } else if (steps === limit) {
      reachedLimit = true; // and it ended right there: the server set truncated (or the env terminated)
    }
    const how = last!.terminated ? 'terminated' : 'truncated';
    const after = await expectError(() => h.step(sampleSpace(ctx.spec.action_space, rng) as never), 'RESET_NEEDED', 'step after the episode ended');
    if (!after.ok) return { ok: false, detail: `${how} at step ${steps}, but ${after.detail}` };
    endings.push(`${how} at step ${steps}`);
    if (limit === null) break;
  }
  const limitNote =
    limit === null ? '' : reachedLimit ? ` (limit ${limit} reached)` : ` (limit ${limit} not reached in ${ROLLOUTS_FOR_LIMIT} rollouts: episodes end earlier)`;
  return { ok: true, detail: `${endings.join(', ')}${limitNote}; each next step got RESET_NEEDED` };
}

async function closeIdempotent(ctx: CheckContext): Promise<Outcome> {
  const h = await open(ctx);
  await h.reset({ seed: ctx.opts.seed });
  // Bypass the handle's memoised close so the server really sees two closes.
  await ctx.client.request('close', { session: h.session });
  await ctx.client.request('close', { session: h.session });
  try {
    await ctx.client.request('step', { session: h.session, action: sampleSpace(ctx.spec.action_space, mulberry32(1)) });
    return { ok: false, detail: 'step on a closed session succeeded' };
  } catch (err) {
    if (!(err instanceof SandgymError) || err.code === 'REQUEST_TIMEOUT' || err.code === 'CONNECTION_CLOSED')
      return { ok: false, detail: `step on a closed session: ${describeError(err)}` };
    return { ok: true, detail: `close twice ok; step after close -> ${err.code}` };
  }
}

/** Structural checks of one step result against the spec. */
function wellFormed(spec: EnvSpec, r: StepResult): string[] {
  const problems: string[] = [];
  const bad = checkSpace(spec.observation_space, r.observation);
  if (bad) problems.push(`observation not in space at ${bad.path}: ${bad.reason}`);
  if (typeof r.reward !== 'number' || !Number.isFinite(r.reward)) problems.push(`reward ${String(r.reward)} is not a finite number`);
  else if (Array.isArray(spec.reward_range) && !inRange(r.reward, spec.reward_range))
    problems.push(`reward ${r.reward} outside reward_range ${JSON.stringify(spec.reward_range)}`);
  if (typeof r.terminated !== 'boolean' || typeof r.truncated !== 'boolean') problems.push('terminated/truncated are not booleans');
  if (!isObject(r.info)) problems.push('info is not an object');
  const components = isObject(r.info) ? r.info.reward_components : undefined;
  if (components !== undefined) {
    if (!isObject(components)) problems.push('info.reward_components is not an object');
    else {
      const names = new Set((spec.rubric ?? []).map((x) => x.name));
      for (const [k, v] of Object.entries(components)) {
        if (typeof v !== 'number' || !Number.isFinite(v)) problems.push(`reward_components.${k} is not a finite number`);
        if (spec.rubric && !names.has(k)) problems.push(`reward_components.${k} is not in the rubric`);
      }
    }
  }
  return problems;
}

function inRange(x: number, [lo, hi]: EnvSpec['reward_range']): boolean {
  const l = lo === '-inf' || lo === 'inf' ? -Infinity : lo;
  const h = hi === 'inf' || hi === '-inf' ? Infinity : hi;
  return x >= l && x <= h;
}

async function expectError(fn: () => Promise<unknown>, code: string, what: string): Promise<Outcome> {
  try {
    await fn();
    return { ok: false, detail: `${what} succeeded; expected ${code}` };
  } catch (err) {
    if (err instanceof SandgymError && err.code === code) return { ok: true, detail: `${what} -> ${code}` };
    return { ok: false, detail: `${what}: expected ${code}, got ${describeError(err)}` };
  }
}

async function open(ctx: SessionContext): Promise<EnvHandle> {
  const h = await ctx.client.make(ctx.envId, ctx.opts.kwargs);
  ctx.handles.push(h);
  return h;
}

/** Steps with sampled actions, resetting if the episode ends, to move an env's state along. */
async function stepAny(ctx: CheckContext, h: EnvHandle, n: number): Promise<void> {
  const rng = mulberry32(ctx.opts.seed + 5);
  for (let i = 0; i < n; i++) {
    const r = await step(ctx, h, sampleSpace(ctx.spec.action_space, rng));
    if (r.terminated || r.truncated) return;
  }
}

interface InvalidSample {
  label: string;
  value: unknown;
}

/** makeInvalidSamples may return bare values or labelled ones; the checker wants labels for its report. */
function normalizeInvalid(raw: unknown): InvalidSample[] {
  if (!Array.isArray(raw)) return [];
  return raw.map((item, i) => {
    if (isObject(item) && 'value' in item) {
      const label = [item.label, item.kind, item.reason, item.description, item.name].find((x) => typeof x === 'string') as string | undefined;
      return { label: label ?? `sample ${i}`, value: item.value };
    }
    return { label: `sample ${i}`, value: item };
  });
}

/** Timing fields in info (if an env reports them) legitimately differ between identical rollouts. */
/**
 * The transition without what legitimately differs between two identical runs, at any depth of `info`: keys that
 * measure time (`duration_ms`, `timings_ms`, `elapsed`...), `sandbox` (the id of the sandbox that served the
 * episode, a new one per session) and `cached` (whether a grade came from the grade cache, which the second of two
 * identical rollouts hits). envs/README.md states this convention.
 */
function stripVolatile<T extends { info?: Record<string, unknown> }>(r: T): unknown {
  return { ...r, info: withoutVolatile(r.info ?? {}) };
}

const VOLATILE_KEY = /^(sandbox|cached)$|(^|_)(ms|time|timings|duration|elapsed)(_|$)/;

function withoutVolatile(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(withoutVolatile);
  if (!isObject(v)) return v;
  const out: Record<string, unknown> = {};
  for (const [k, val] of Object.entries(v)) if (!VOLATILE_KEY.test(k)) out[k] = withoutVolatile(val);
  return out;
}

/** JSON with sorted keys, for order-insensitive deep equality. */
function canonical(v: unknown): string {
  return JSON.stringify(v, (_k, val: unknown) =>
    isObject(val)
      ? Object.fromEntries(
          Object.keys(val)
            .sort()
            .map((k) => [k, val[k]]),
        )
      : val,
  );
}

function preview(v: unknown): string {
  const s = canonical(v) ?? String(v);
  return s.length > 160 ? `${s.slice(0, 157)}...` : s;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function describeError(err: unknown): string {
  if (err instanceof SandgymError) return `${err.code}: ${err.message}`;
  return err instanceof Error ? err.message : String(err);
}

function now(): number {
  return typeof performance !== 'undefined' ? performance.now() : Date.now();
}
