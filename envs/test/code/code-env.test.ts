// code-v0 through its EnvInstance API on the host stand-in provider (real grading path: tar out,
// filter, fresh grading "sandbox", pytest / node --test, JUnit, rubric). The same episodes run over
// the wire on Docker in test/integrity/.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { InvalidArgument, SandboxFailure, type EnvDefinition, type EnvInstance, type StepResult } from '../../src/api.js';
import { capText, confinePath, createCodeEnv } from '../../src/code/code-env.js';
import { TaskSet } from '../../src/code/task-loader.js';
import type { LoadedTask } from '../../src/code/task-types.js';
import { PYTHON, shippedTasks } from './helpers.js';
import { EnvLocalProvider } from './local-sandbox.js';

let dir: string;
let n = 0;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'sandgym-codeenv-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const all = await shippedTasks();

function makeEnv(splits: ('train' | 'eval')[] = ['train', 'eval']): { def: EnvDefinition; provider: EnvLocalProvider; abort: AbortController } {
  const provider = new EnvLocalProvider(path.join(dir ?? os.tmpdir(), `p${n++}`));
  const def = createCodeEnv({
    taskSet: new TaskSet(all, splits),
    paths: { agentWorkspace: provider.agentWorkspace, gradeWorkspace: provider.gradeWorkspace, scratch: provider.scratch },
    runner: {
      python: PYTHON ?? 'python3',
      node: process.execPath,
      path: process.env.PATH ?? '/usr/bin:/bin',
      judgeDir: path.join(provider.root, 'grade', 'judge'),
      sameUidWorker: true,
    },
    killStragglers: false, // host stand-in: no PID namespace
  });
  return { def, provider, abort: new AbortController() };
}

const logger = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };

async function instance(env: ReturnType<typeof makeEnv>, kwargs: Record<string, unknown> = {}): Promise<EnvInstance> {
  return env.def.create({ signal: env.abort.signal, logger, sandboxes: env.provider }, kwargs);
}

const call = (name: string, args: Record<string, unknown> = {}) => ({ name, arguments: args });
const text = (b: Uint8Array) => Buffer.from(b).toString('utf8');

/** The reference solution as agent actions: write_file per overlay file, bash for solve.sh. */
function referenceActions(task: LoadedTask) {
  const acts = task.solution.files.map((f) => call('write_file', { path: f.path, content: text(f.content) }));
  if (task.solution.kind === 'script') acts.push(call('bash', { command: text(task.solution.script.content) }));
  return acts;
}

function sum(rs: StepResult[]): number {
  return rs.reduce((a, r) => a + r.reward, 0);
}

describe('code-v0 definition (no sandbox needed)', () => {
  test('env_spec pieces: tools, rubric, splits, sandbox', () => {
    const { def } = makeEnv(['train']);
    expect(def.id).toBe('code-v0');
    expect(def.action_space.type).toBe('tool_call');
    expect((def.action_space as { tools: { name: string }[] }).tools.map((t) => t.name)).toEqual(['bash', 'read_file', 'write_file', 'list_files', 'submit']);
    expect(def.rubric?.map((r) => r.name)).toEqual(['tests', 'final_state']);
    expect(def.tasks?.splits).toEqual({ train: all.filter((t) => t.spec.split === 'train').length });
    expect(def.sandbox?.image).toBe('sandgym/python:1');
    expect(def.max_episode_steps).toBe(Math.max(...all.map((t) => t.spec.max_steps)));
  });

  test('confinePath keeps paths inside /workspace', () => {
    expect(confinePath('a/b.py', '/w')).toEqual({ abs: '/w/a/b.py', rel: 'a/b.py' });
    expect(confinePath('/workspace/x', '/w')).toEqual({ abs: '/w/x', rel: 'x' });
    expect(confinePath('/workspace', '/w')).toEqual({ abs: '/w', rel: '' });
    expect(confinePath('a/../b', '/w')).toEqual({ abs: '/w/b', rel: 'b' });
    for (const bad of ['../x', '/etc/passwd', '/workspace/../etc', 'a/../../x', '/workspacex/y', 'a\u0000b']) expect(confinePath(bad, '/w')).toBeNull();
  });

  test('capText keeps head and tail with a visible marker', () => {
    const s = 'a'.repeat(100) + 'b'.repeat(100);
    const c = capText(s, 50);
    expect(c).toMatch(/^a{30}\n\[\.\.\. 150 characters truncated \.\.\.\]\nb{20}$/);
    expect(capText('short', 50)).toBe('short');
  });

  test('create without a sandbox provider is a SandboxFailure', () => {
    const { def, abort } = makeEnv();
    expect(() => def.create({ signal: abort.signal, logger }, {})).toThrow(SandboxFailure);
  });
});

describe.skipIf(!PYTHON)('code-v0 episodes on the host stand-in provider (skipped: host python3 without pytest)', () => {
  test('reference solution via write_file: rewards sum to 1.0, submit terminates', async () => {
    const env = makeEnv();
    const inst = await instance(env);
    const r0 = await inst.reset(undefined, { task_id: 'py-slugify' });
    expect(r0.info).toMatchObject({ task_id: 'py-slugify', split: 'train', difficulty: 'easy', reward_components: { tests: 0 } });
    expect(String(r0.observation)).toContain('slugify');
    expect(String(r0.observation)).toContain('slug.py');
    const task = all.find((t) => t.spec.id === 'py-slugify')!;
    const rs: StepResult[] = [];
    for (const a of referenceActions(task)) rs.push(await inst.step(a));
    expect(rs[0]!.info?.graded).toBe(true);
    const last = await inst.step(call('submit'));
    rs.push(last);
    expect(last.terminated).toBe(true);
    expect(last.truncated).toBe(false);
    expect(sum(rs)).toBeCloseTo(1, 9);
    expect(last.info?.score).toBe(1);
    expect((last.info?.grade as { cached: boolean }).cached).toBe(true); // unchanged since the write
    expect(last.reward).toBe(0);
    // Per-component rewards add up to the step reward.
    for (const r of rs) {
      const comps = Object.values(r.info?.reward_components as Record<string, number>);
      expect(comps.reduce((a, b) => a + b, 0)).toBeCloseTo(r.reward, 9);
    }
    const n = task.spec.test.expected_tests;
    expect(String(last.observation)).toMatch(new RegExp(`Score: 1\\.000 \\(${n}/${n} tests passed\\)`));
    await expect(inst.step(call('bash', { command: 'true' }))).rejects.toThrow(/reset first/);
    await inst.close();
    expect(env.provider.acquired).toBe(env.provider.released);
  });

  test('null agent: submit the untouched workspace scores 0', async () => {
    const env = makeEnv();
    const inst = await instance(env);
    await inst.reset(0, { task_id: 'py-caesar-cipher', split: 'eval' });
    const r = await inst.step(call('submit'));
    expect(r.terminated).toBe(true);
    expect(r.reward).toBe(0);
    expect(r.info).toMatchObject({ task_id: 'py-caesar-cipher', split: 'eval', graded: true, score: 0 });
    await inst.close();
  });

  test('shaping: a wrong write then a fix; every_step, none; sums equal the final score', async () => {
    const task = all.find((t) => t.spec.id === 'js-deep-equal')!;
    const good = text(task.solution.files[0]!.content);
    for (const shaping of ['on_write', 'every_step', 'none'] as const) {
      const env = makeEnv();
      const inst = await instance(env, { shaping });
      await inst.reset(undefined, { task_id: 'js-deep-equal' });
      const rs: StepResult[] = [];
      rs.push(await inst.step(call('write_file', { path: 'deep-equal.mjs', content: 'export function deepEqual(a, b) { return Object.is(a, b); }\n' })));
      rs.push(await inst.step(call('bash', { command: 'ls' })));
      rs.push(await inst.step(call('write_file', { path: '/workspace/deep-equal.mjs', content: good })));
      rs.push(await inst.step(call('write_file', { path: 'deep-equal.mjs', content: 'export function deepEqual(a, b) { return Object.is(a, b); }\n' })));
      rs.push(await inst.step(call('submit')));
      const final = rs[rs.length - 1]!.info?.score as number;
      expect(sum(rs)).toBeCloseTo(final, 9);
      expect(final).toBeGreaterThan(0);
      expect(final).toBeLessThan(1);
      const graded = rs.map((r) => r.info?.graded);
      if (shaping === 'on_write') expect(graded).toEqual([true, false, true, true, true]);
      if (shaping === 'every_step') expect(graded).toEqual([true, true, true, true, true]);
      if (shaping === 'none') {
        expect(graded).toEqual([false, false, false, false, true]);
        expect(rs.slice(0, 4).every((r) => r.reward === 0)).toBe(true);
      } else {
        expect(rs[2]!.info?.score).toBe(1);
        expect(rs[3]!.reward).toBeLessThan(0); // breaking it again costs what the fix earned
        expect((rs[3]!.info?.grade as { cached: boolean }).cached).toBe(true); // same workspace as step 1
      }
      await inst.close();
    }
  }, 120_000);

  test('max_steps: the step at the limit grades and truncates; rewards sum to that grade', async () => {
    const env = makeEnv();
    const base = all.find((t) => t.spec.id === 'py-slugify')!;
    const short: LoadedTask = { ...base, spec: { ...base.spec, max_steps: 2 } };
    const def = createCodeEnv({
      taskSet: new TaskSet([short], ['train']),
      paths: { agentWorkspace: env.provider.agentWorkspace, gradeWorkspace: env.provider.gradeWorkspace, scratch: env.provider.scratch },
      runner: {
        python: PYTHON ?? 'python3',
        node: process.execPath,
        path: process.env.PATH ?? '/usr/bin:/bin',
        judgeDir: path.join(env.provider.root, 'grade', 'judge'),
        sameUidWorker: true,
      },
      killStragglers: false,
    });
    expect(def.max_episode_steps).toBe(2);
    const inst = await def.create({ signal: env.abort.signal, logger, sandboxes: env.provider }, { shaping: 'none' });
    await inst.reset(1, {});
    const a = await inst.step(call('bash', { command: 'echo hi' }));
    expect(a).toMatchObject({ reward: 0, terminated: false, truncated: false });
    const b = await inst.step(call('write_file', { path: 'slug.py', content: text(base.solution.files.find((f) => f.path === 'slug.py')!.content) }));
    expect(b).toMatchObject({ reward: 1, terminated: false, truncated: true });
    expect(String(b.observation)).toMatch(/Step limit \(2\) reached/);
    await inst.close();
  });

  test('tools: bash output, read_file ranges, list_files, tool errors are observations', async () => {
    const env = makeEnv();
    const inst = await instance(env, { shaping: 'none' });
    await inst.reset(undefined, { task_id: 'py-fix-inventory' });
    const obs = async (name: string, args: Record<string, unknown> = {}) => String((await inst.step(call(name, args))).observation);
    // The one bash output format of the sandboxed envs (envs/src/tools/bash-tool.ts, formatBashResult).
    expect(await obs('bash', { command: 'echo out; echo err >&2; exit 3' })).toBe('exit code: 3\nstdout:\nout\n\nstderr:\nerr\n');
    expect(await obs('bash', { command: 'sleep 5', timeout_s: 1 })).toMatch(/^timed out after 1 s \(killed\)/);
    expect(await obs('bash', { command: 'head -c 100000 /dev/zero | tr "\\0" x' })).toMatch(/characters truncated/);
    expect(await obs('write_file', { path: 'notes/a.txt', content: 'l1\nl2\nl3\n' })).toBe('wrote 9 bytes to /workspace/notes/a.txt');
    expect(await obs('read_file', { path: 'notes/a.txt' })).toBe('l1\nl2\nl3\n');
    expect(await obs('read_file', { path: '/workspace/notes/a.txt', start_line: 2, end_line: 5 })).toBe('/workspace/notes/a.txt (lines 2-3 of 3):\nl2\nl3');
    expect(await obs('read_file', { path: 'notes/a.txt', start_line: 9 })).toMatch(/^error: empty line range/);
    expect(await obs('read_file', { path: 'missing.py' })).toMatch(/^error: cannot read \/workspace\/missing.py: .*No such file/);
    expect(await obs('read_file', { path: 'notes' })).toMatch(/^error: cannot read .*Is a directory/);
    expect(await obs('list_files')).toMatch(/^\/workspace:\n(.|\n)*notes\/\nnotes\/a\.txt/);
    expect(await obs('list_files', { path: 'nope' })).toMatch(/^error: cannot list \/workspace\/nope/);
    for (const bad of ['../etc/passwd', '/etc/passwd', '/workspace/../../etc/shadow']) {
      expect(await obs('read_file', { path: bad })).toMatch(/^error: path .* is outside \/workspace/);
      expect(await obs('write_file', { path: bad, content: 'x' })).toMatch(/^error: path .* is outside \/workspace/);
      expect(await obs('list_files', { path: bad })).toMatch(/^error: path .* is outside \/workspace/);
    }
    expect(await obs('write_file', { path: '/workspace', content: 'x' })).toMatch(/not a file path/);
    await expect(inst.step(call('nope'))).rejects.toBeInstanceOf(InvalidArgument);
    await inst.close();
  }, 60_000);

  test('splits: default train, eval only when asked and exposed, no oracle for hidden ids', async () => {
    const trainOnly = makeEnv(['train']);
    const inst = await instance(trainOnly);
    const evalTask = all.find((t) => t.spec.split === 'eval')!.spec.id;
    for (let seed = 0; seed < 20; seed++) expect((await inst.reset(seed, {})).info?.split).toBe('train');
    await expect(inst.reset(0, { split: 'eval' })).rejects.toThrow(InvalidArgument);
    const e1 = (await inst.reset(0, { task_id: evalTask }).catch((e: Error) => e)) as Error;
    const e2 = (await inst.reset(0, { task_id: 'no-such-task' }).catch((e: Error) => e)) as Error;
    expect(e1).toBeInstanceOf(InvalidArgument);
    expect(e1.message.replace(evalTask, 'X')).toBe(e2.message.replace('no-such-task', 'X'));
    await expect(inst.reset(0, { bogus: 1 })).rejects.toMatchObject({ path: '/bogus' });
    await expect(inst.reset(0, { split: 'test' })).rejects.toMatchObject({ path: '/split' });
    await inst.close();

    const both = makeEnv(['train', 'eval']);
    const i2 = await instance(both);
    // Exposed but not asked for: still never an eval task.
    await expect(i2.reset(0, { task_id: evalTask })).rejects.toThrow(InvalidArgument);
    expect((await i2.reset(0, { task_id: evalTask, split: 'eval' })).info?.split).toBe('eval');
    const a = await i2.reset(7, { split: 'eval' });
    const b = await i2.reset(7, { split: 'eval' });
    expect(a.info?.task_id).toBe(b.info?.task_id);
    expect(a.info?.split).toBe('eval');
    await i2.close();
    expect(both.provider.acquired).toBe(both.provider.released);
  }, 60_000);

  test('sandbox failure: acquire, a tool call and grading throw SandboxFailure (never reward 0)', async () => {
    const env = makeEnv();
    const inst = await instance(env);
    env.provider.failAcquire = true;
    await expect(inst.reset(0, {})).rejects.toBeInstanceOf(SandboxFailure);
    env.provider.failAcquire = false;
    await inst.reset(0, { task_id: 'py-slugify' });
    env.provider.broken = true;
    await expect(inst.step(call('bash', { command: 'true' }))).rejects.toBeInstanceOf(SandboxFailure);
    env.provider.broken = false;
    await inst.reset(0, { task_id: 'py-slugify' });
    await inst.step(call('bash', { command: 'true' }));
    env.provider.broken = true;
    await expect(inst.step(call('submit'))).rejects.toBeInstanceOf(SandboxFailure);
    env.provider.broken = false;
    // A new reset works after a failure and releases the dead sandbox.
    await inst.reset(0, { task_id: 'py-slugify' });
    await inst.close();
    expect(env.provider.held.size).toBe(0);
  });

  test('a grading image that cannot run the tests is a SandboxFailure, not a score of 0', async () => {
    const env = makeEnv();
    const def = createCodeEnv({
      taskSet: new TaskSet(all, ['train']),
      paths: { agentWorkspace: env.provider.agentWorkspace, gradeWorkspace: env.provider.gradeWorkspace, scratch: env.provider.scratch },
      runner: {
        python: '/nonexistent/python3',
        node: '/nonexistent/node',
        path: process.env.PATH ?? '/usr/bin:/bin',
        judgeDir: path.join(env.provider.root, 'grade', 'judge'),
        sameUidWorker: true,
      },
      killStragglers: false,
    });
    const inst = await def.create({ signal: env.abort.signal, logger, sandboxes: env.provider }, {});
    for (const id of ['py-slugify', 'js-deep-equal']) {
      await inst.reset(0, { task_id: id });
      const err = await inst.step(call('submit')).catch((e: unknown) => e);
      expect(err, id).toBeInstanceOf(SandboxFailure);
      expect((err as Error).message).toMatch(/cannot run (pytest-harness|node-harness) tests/);
    }
    await inst.close();
    expect(env.provider.held.size).toBe(0);
  });

  test('session abort releases the agent sandbox', async () => {
    const env = makeEnv();
    const inst = await instance(env);
    await inst.reset(0, {});
    expect(env.provider.held.size).toBe(1);
    env.abort.abort();
    await new Promise((r) => setTimeout(r, 20));
    expect(env.provider.held.size).toBe(0);
    await inst.close();
  });
});
