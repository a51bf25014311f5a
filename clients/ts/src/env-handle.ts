// One session on a connection. The handle is a thin veneer over client.request: ordering per session
// is the server's job, so steps may be pipelined on one handle without awaiting each.

import { schedulingFields, type RequestOptions, type SessionRequester } from './requests.js';
import type { EnvSpec, ResetParams, ResetResult, StepResult } from './types.js';

export class EnvHandle<O = unknown, A = unknown> {
  private closing: Promise<void> | undefined;

  constructor(
    private readonly client: SessionRequester,
    /** Server-issued session id (unique within the connection). */
    readonly session: string,
    /** The env spec as `make` returned it (spaces, max_episode_steps, tools, rubric...). */
    readonly spec: EnvSpec,
  ) {}

  get envId(): string {
    return this.spec.id;
  }

  /** True once close() was called on this handle. */
  get closed(): boolean {
    return this.closing !== undefined;
  }

  async reset(params: ResetParams = {}, opts?: RequestOptions): Promise<ResetResult<O>> {
    const msg: Record<string, unknown> = { session: this.session };
    if (params.seed !== undefined) msg.seed = params.seed;
    if (params.options !== undefined) msg.options = params.options;
    Object.assign(msg, schedulingFields(params));
    const r = await this.client.request<ResetResult<O>>('reset', msg, opts);
    return { observation: r.observation, info: r.info ?? {} };
  }

  async step(action: A, opts?: RequestOptions): Promise<StepResult<O>> {
    const r = await this.client.request<StepResult<O>>('step', { session: this.session, action }, opts);
    return { observation: r.observation, reward: r.reward, terminated: r.terminated, truncated: r.truncated, info: r.info ?? {} };
  }

  /** Idempotent: later calls return the first call's promise (the server also accepts repeats). */
  close(opts?: RequestOptions): Promise<void> {
    this.closing ??= this.client.request('close', { session: this.session }, opts).then(() => undefined);
    return this.closing;
  }
}
