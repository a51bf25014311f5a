// gradeSubmission's decisions with a scripted grading sandbox (no processes): which outcomes are
// a 0 with a reason, which are infrastructure failures, caching, and sandbox release.
import { CaptureRefused } from '../../src/workspace/capture.js';
import { describe, expect, test } from 'vitest';
import { SandboxFailure } from '../../src/api.js';
import { gradeSubmission, componentNames } from '../../src/code/grade.js';
import { GradeCache } from '../../src/code/rubric.js';
import type { LoadedTask } from '../../src/code/task-types.js';
import { writeTar } from '../../src/code/workspace-tar.js';
import type { ExecRequest, ExecResult, Sandbox, SandboxProvider } from '../../src/sandbox-api.js';
import { trustedFixture } from './helpers.js';

// The in-process pipeline's decisions (tamper scan, prepare step, dropped files): a trusted copy of py-top-words.
const task = await trustedFixture('py-top-words-trusted');
const N = task.spec.test.expected_tests;

function xml(passed: number, failed: number): string {
  const ok = Array.from({ length: passed }, (_, i) => `<testcase classname="t" name="p${i}"/>`).join('');
  const bad = Array.from({ length: failed }, (_, i) => `<testcase classname="t" name="f${i}"><failure message="x"/></testcase>`).join('');
  return `<testsuites><testsuite>${ok}${bad}</testsuite></testsuites>`;
}

interface Script {
  report?: string | null;
  status?: number;
  hashes?: Record<string, string>;
  syntax?: { path: string; ok: boolean }[];
  done?: boolean;
  prepareExit?: number;
  throwOnRun?: boolean;
}

function output(nonce: string, s: Script, t: LoadedTask): string {
  const f = (tag: string) => `\n${nonce}:${tag}\n`;
  const hashes = s.hashes ?? Object.fromEntries(t.tests.map((x) => [`./${x.path}`, x.sha256]));
  let out = f('syntax:begin') + (s.syntax ?? []).map((r) => JSON.stringify({ path: `/workspace/${r.path}`, ok: r.ok })).join('\n') + f('syntax:end');
  out += f(`status:${s.status ?? 0}`);
  if (s.report !== null) out += f('report:begin') + Buffer.from(s.report ?? xml(N, 0)).toString('base64') + f('report:end');
  out +=
    f('hashes:begin') +
    Object.entries(hashes)
      .map(([p, h]) => `${h}  ${p}`)
      .join('\n') +
    f('hashes:end');
  out += f('log:begin') + f('log:end');
  if (s.done !== false) out += f('done');
  return out;
}

class ScriptedProvider implements SandboxProvider {
  acquired = 0;
  released = 0;
  execs: ExecRequest[] = [];
  constructor(private readonly script: Script) {}
  async acquire(): Promise<Sandbox> {
    this.acquired++;
    const self = this;
    const res = (stdout: string, exit = 0): ExecResult => ({
      exit_code: exit,
      signal: null,
      stdout,
      stderr: '',
      truncated: false,
      timed_out: false,
      oom_killed: false,
      duration_ms: 1,
    });
    return {
      id: 'scripted',
      async exec(req: ExecRequest) {
        self.execs.push(req);
        if (req.argv?.[0] === 'sh' && req.argv[1] === '-c') return res('', self.script.prepareExit ?? 0);
        if (self.script.throwOnRun) throw new SandboxFailure('sandbox died');
        const nonce = String(req.stdin).trim();
        return res(output(nonce, self.script, task));
      },
      async putFiles() {},
      async getFile() {
        return new Uint8Array();
      },
      async execBinary(): Promise<never> {
        throw new Error('not used: gradeSubmission gets the archive');
      },
      async getTar() {
        return new Uint8Array();
      },
      async putTar() {},
    };
  }
  async release(): Promise<void> {
    this.released++;
  }
}

async function submission(files: Record<string, string> = { 'words.py': 'def top_words(t, k):\n    return []\n' }): Promise<Uint8Array> {
  return writeTar(Object.entries(files).map(([path, text]) => ({ path, content: new TextEncoder().encode(text) })));
}

async function grade(script: Script, files?: Record<string, string>, cache?: GradeCache<Awaited<ReturnType<typeof gradeSubmission>>>) {
  const provider = new ScriptedProvider(script);
  const r = await gradeSubmission(task, await submission(files), { provider, requirement: { image: 'x' }, ...(cache ? { cache } : {}) });
  return { r, provider };
}

describe('gradeSubmission decisions', () => {
  test('all tests pass + changed file compiles => 1', async () => {
    const { r, provider } = await grade({ syntax: [{ path: 'words.py', ok: true }] });
    expect(r.score).toEqual({ total: 1, components: { tests: 1 } });
    expect(r.syntax).toEqual({ checked: 1, failed: [] });
    expect(r.changed).toEqual(['words.py']);
    expect(provider.acquired).toBe(1);
    expect(provider.released).toBe(1);
    expect(componentNames(task)).toEqual(['tests']);
  });

  test('partial pass is a fraction', async () => {
    const { r } = await grade({ report: xml(N - 2, 2), syntax: [{ path: 'words.py', ok: true }] });
    expect(r.score.components.tests).toBeCloseTo((N - 2) / N);
    expect(r.score.total).toBeGreaterThan(0);
    expect(r.score.total).toBeLessThan(1);
  });

  test.each<[string, Script, RegExp]>([
    ['missing report', { report: null }, /report missing/],
    ['malformed report', { report: '<testsuites><oops' }, /report malformed/],
    ['too few tests', { report: xml(N - 1, 0) }, new RegExp(`collected ${N - 1} tests, the task declares ${N}`)],
    ['too many tests', { report: xml(N + 1, 0) }, /collected/],
    ['runner timed out', { status: 124 }, /tests timed out/],
    ['runner killed by a signal (report may be forged)', { status: 143 }, /test runner exited with status 143/],
    ['pytest internal error', { status: 3 }, /status 3/],
    ['wrapper killed (no done frame)', { done: false }, /did not complete/],
    ['hidden tests changed', { hashes: { './test_words.py': '0'.repeat(64) } }, /hidden tests modified during the run: \.\/test_words\.py/],
    ['extra file appeared in the tests dir', { hashes: { './test_words.py': 'x', './evil.py': 'y' } }, /hidden tests modified/],
  ])('%s => 0 with a reason', async (_name, script, reason) => {
    const { r, provider } = await grade(script);
    expect(r.score.total).toBe(0);
    expect(r.score.zero_reason).toMatch(reason);
    expect(provider.released).toBe(provider.acquired);
  });

  test('tampering is decided before any sandbox is acquired', async () => {
    const { r, provider } = await grade({}, { 'words.py': 'import pytest\n' });
    expect(r.score.zero_reason).toMatch(/tampering suspected: words.py:1 mentions pytest/);
    expect(provider.acquired).toBe(0);
  });

  test('infrastructure failures throw SandboxFailure (never a 0) and still release', async () => {
    const a = new ScriptedProvider({ prepareExit: 1 });
    await expect(gradeSubmission(task, await submission(), { provider: a, requirement: { image: 'x' } })).rejects.toBeInstanceOf(SandboxFailure);
    expect(a.released).toBe(1);
    const b = new ScriptedProvider({ throwOnRun: true });
    await expect(gradeSubmission(task, await submission(), { provider: b, requirement: { image: 'x' } })).rejects.toBeInstanceOf(SandboxFailure);
    expect(b.released).toBe(1);
    // An archive that is not one is the agent's (its uid produced it): a 0 with the reason, never a retryable error.
    const garbage = await gradeSubmission(task, new TextEncoder().encode('x'.repeat(1024)), { provider: b, requirement: { image: 'x' } });
    expect(garbage.score.zero_reason).toMatch(/^workspace archive unreadable/);
  });

  test('an oversized workspace scores 0 without grading', async () => {
    const provider = new ScriptedProvider({});
    const r = await gradeSubmission(task, await submission({ 'a.txt': 'x'.repeat(5000) }), {
      provider,
      requirement: { image: 'x' },
      captureLimits: { maxBytes: 1000 },
    });
    expect(r.score.zero_reason).toBe('workspace file a.txt is larger than the 1000 bytes workspace cap');
    const refused = await gradeSubmission(task, new CaptureRefused('special_file', 'p', 'workspace path p is a FIFO: special files cannot be graded'), {
      provider,
      requirement: { image: 'x' },
    });
    expect(refused.score).toMatchObject({ total: 0, zero_reason: 'workspace path p is a FIFO: special files cannot be graded' });
    expect(provider.acquired).toBe(0);
  });

  test('an unchanged workspace is served from the cache; any change to the capture (even a cache file) is graded again', async () => {
    const cache = new GradeCache<Awaited<ReturnType<typeof gradeSubmission>>>();
    const first = await grade({ syntax: [{ path: 'words.py', ok: true }] }, undefined, cache);
    expect(first.r.cached).toBe(false);
    const again = await grade({}, { 'words.py': 'def top_words(t, k):\n    return []\n' }, cache);
    expect(again.r.cached).toBe(true);
    expect(again.provider.acquired).toBe(0);
    expect(again.r.score).toEqual(first.r.score);
    // The judge grades what exists: a file under __pycache__/ is part of the workspace, so part of the key.
    const pyc = await grade({}, { 'words.py': 'def top_words(t, k):\n    return []\n', '__pycache__/w.pyc': 'junk' }, cache);
    expect(pyc.r.cached).toBe(false);
    const changed = await grade({}, { 'words.py': 'def top_words(t, k):\n    return [1]\n' }, cache);
    expect(changed.r.cached).toBe(false);
  });

  test('the runner preflight runs until an image (by content id) passed it, then is skipped for that image only', async () => {
    const withImage = (p: ScriptedProvider, imageId: string | null): SandboxProvider => ({
      acquire: async () => ({ ...(await p.acquire()), image_id: imageId }),
      release: () => p.release(),
    });
    const preflightArg = async (imageId: string | null, script: Script = {}, opts: { preflightCache?: boolean; python?: string } = {}) => {
      const p = new ScriptedProvider(script);
      await gradeSubmission(task, await submission(), { provider: withImage(p, imageId), requirement: { image: 'x' }, ...opts }).catch(() => undefined);
      return p.execs.at(-1)?.argv?.[5];
    };
    const id = `sha256:${Math.random().toString(16).slice(2)}`;
    // A run that did not complete proves nothing about the runner: the next one checks again.
    expect(await preflightArg(id, { done: false })).toBe('1');
    expect(await preflightArg(id)).toBe('1');
    expect(await preflightArg(id)).toBe('0');
    // Other runner options, another image, no image id, or the cache turned off: checked.
    expect(await preflightArg(id, {}, { python: '/usr/bin/python3.11' })).toBe('1');
    expect(await preflightArg(`${id}0`)).toBe('1');
    expect(await preflightArg(null)).toBe('1');
    expect(await preflightArg(null)).toBe('1');
    expect(await preflightArg(id, {}, { preflightCache: false })).toBe('1');
  });
});
