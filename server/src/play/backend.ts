// What the play session needs from a connection: make an env, then reset/step/close it. The CLI adapts
// the TS client to this; tests may hand in anything with the same shape.
import type { EnvSpec, ResetResult, StepResult } from '#protocol/index.js';

export interface PlayEnvHandle {
  readonly spec: EnvSpec;
  reset(args: { seed?: number; options?: Record<string, unknown> }): Promise<ResetResult>;
  step(action: unknown): Promise<StepResult>;
  close(): Promise<void>;
}

export interface PlayBackend {
  make(envId: string, kwargs?: Record<string, unknown>): Promise<PlayEnvHandle>;
}

/** File access for :save / :replay, injected so the session stays free of direct I/O. */
export interface PlayFiles {
  readText(path: string): Promise<string>;
  writeText(path: string, text: string): Promise<void>;
}
