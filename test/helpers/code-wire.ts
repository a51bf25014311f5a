// code-v0 over the wire for the reward-integrity tests: a real server with a real sandbox driver, the TS client,
// one code-v0 session per describe block, and the submit step whose error answers fail the test by name.

import { afterAll, beforeAll, expect } from 'vitest';
import { connect, type EnvHandle, SandgymError, type SandgymClient, type StepResult } from '../../clients/ts/src/index.js';
import type { ServerConfig } from '../../server/src/config.js';
import { startServer, type TestServer } from './server.js';

/** code-v0's tool call. */
export type CodeAction = { name: string; arguments: Record<string, unknown> };
export type CodeEnv = EnvHandle<string, CodeAction>;

/** info.grade of a graded code-v0 step, as the tests read it (the wire shape envs/src/code/code-env.ts gives). */
export interface CodeGrade {
  score: number;
  components: Record<string, number>;
  zero_reason?: string;
  tests?: { collected: number; passed: number };
  failures?: { test: string; message: string }[];
  cached: boolean;
  dropped: number;
  timings_ms: { total: number };
}

/** The server settings a test gives codeWire: the driver and the step timeout always, anything else to override. */
export type WireConfig = Partial<ServerConfig> & Pick<ServerConfig, 'driver' | 'step_timeout_ms'>;

export interface CodeWire {
  readonly server: TestServer;
  readonly client: SandgymClient;
  readonly env: CodeEnv;
}

/**
 * Registers, in the calling describe block, a beforeAll that starts a server (its default task sets unless `config`
 * says otherwise, train split, warm pools), connects the client and makes `code-v0` with shaping none (only submit
 * grades: one grading per episode), and an afterAll that closes both. `config` (driver, step_timeout_ms, tasks,
 * pools...) wins over those defaults; a function is called in the beforeAll, for values an earlier hook sets (a task
 * directory written by the file's own beforeAll). The accessors throw when read outside the block's tests.
 */
export function codeWire(config: WireConfig | (() => WireConfig)): CodeWire {
  let server: TestServer | undefined;
  let client: SandgymClient | undefined;
  let env: CodeEnv | undefined;
  beforeAll(async () => {
    const overrides = typeof config === 'function' ? config() : config;
    server = await startServer({ fixtures: false, splits: ['train'], pools: { min_idle: 1, max_total: 6 }, ...overrides });
    client = await connect(server.url);
    env = await client.make<string, CodeAction>('code-v0', { shaping: 'none' });
  }, 120_000);
  afterAll(async () => {
    await client?.close();
    await server?.close();
  }, 60_000);
  const started = <T>(what: string, v: T | undefined): T => {
    if (v === undefined) throw new Error(`codeWire: no ${what} (read outside the describe block's tests, or beforeAll failed)`);
    return v;
  };
  return {
    get server() {
      return started('server', server);
    },
    get client() {
      return started('client', client);
    },
    get env() {
      return started('env', env);
    },
  };
}

/** write_file for each path of `files`, with the content `body` makes of it (as is by default); each write must succeed. */
export async function writeFiles(env: CodeEnv, files: Record<string, string>, body = (_path: string, content: string) => content): Promise<void> {
  for (const [p, content] of Object.entries(files)) {
    const w = await env.step({ name: 'write_file', arguments: { path: p, content: body(p, content) } });
    expect(w.observation).toMatch(/^wrote \d+ bytes/);
  }
}

/**
 * The submit step. An error answer fails the test with its code, retryability, message and details (an agent's
 * submission must always be graded, never answered with an error); the episode must end.
 */
export async function submitStep(env: CodeEnv): Promise<StepResult<string>> {
  let s: StepResult<string>;
  try {
    s = await env.step({ name: 'submit', arguments: {} });
  } catch (e) {
    if (e instanceof SandgymError) throw new Error(`submit answered ${e.code} (retryable ${String(e.retryable)}): ${e.message} ${JSON.stringify(e.details)}`);
    throw e;
  }
  expect(s.terminated).toBe(true);
  return s;
}

/** info.grade of a graded repository task (envs/src/repo: repo-grade.ts, repo-grade-go.ts). */
export interface RepoGrade {
  score: number;
  zero_reason?: string;
  repo: {
    isolation: string;
    ignored: string[];
    report: string;
    fail_to_pass: { passed: number; total: number };
    pass_to_pass: { passed: number; total: number };
  };
}
export interface RepoOutcome {
  reward: number;
  grade: RepoGrade;
  grader: { isolation?: string; version: string };
  /** Wall time of the submit step (capture and grading), ms. */
  ms: number;
}

/**
 * One repository-task episode: reset to `task` (its observation must match `notice`, the what-is-not-graded line of
 * its language), the steps (a string is one bash command in /workspace that must exit 0), then submit.
 */
export async function playRepo(env: CodeEnv, task: string, notice: RegExp, steps: (string | CodeAction)[]): Promise<RepoOutcome> {
  const r = await env.reset({ seed: 0, options: { task_id: task } });
  expect(String(r.observation)).toMatch(notice);
  for (const s of steps) {
    const action: CodeAction = typeof s === 'string' ? { name: 'bash', arguments: { command: `set -e\ncd /workspace\n${s}`, timeout_s: 60 } } : s;
    const o = await env.step(action);
    if (action.name === 'bash') expect(String(o.observation).split('\n')[0], String(o.observation)).toBe('exit code: 0');
  }
  const t0 = performance.now();
  const s = await submitStep(env);
  const info = s.info as { grade: RepoGrade; grader: RepoOutcome['grader'] };
  return { reward: s.reward, grade: info.grade, grader: info.grader, ms: performance.now() - t0 };
}

/** The reference fix of a repository task as write_file steps (what an agent that found the fix would do). */
export function referenceSteps(task: { solution: { files: readonly { path: string; content: Uint8Array }[] } }): CodeAction[] {
  return task.solution.files.map((f) => ({ name: 'write_file', arguments: { path: f.path, content: Buffer.from(f.content).toString('utf8') } }));
}

/** Scored 0, with a reason matching `why`. */
export function expectZero(o: { reward: number; grade: { score: number; zero_reason?: string } }, why: RegExp): void {
  expect(o.reward, JSON.stringify(o.grade)).toBe(0);
  expect(o.grade.score).toBe(0);
  expect(o.grade.zero_reason ?? '', JSON.stringify(o.grade)).toMatch(why);
}
