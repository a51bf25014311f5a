// The one `bash` tool definition: both sandboxed envs advertise it, and a call is checked against it
// by the same space checker the server runs before env.step.
import { describe, expect, it } from 'vitest';
import { checkSpace, type Space } from '../../../protocol/src/index.js';
import { shellEnv } from '../../src/builtin/shell/shell-env.js';
import { createCodeEnv } from '../../src/code/code-env.js';
import { loadTaskSets, TaskSet } from '../../src/code/task-loader.js';
import type { ExecResult } from '../../src/sandbox-api.js';
import { bashTimeoutS, bashTool, formatBashResult } from '../../src/tools/bash-tool.js';
import { TASKS_DIR } from '../code/helpers.js';

const spaceWith = (tool: ReturnType<typeof bashTool>): Space => ({ type: 'tool_call', tools: [tool] });
const call = (args: Record<string, unknown>) => ({ name: 'bash', arguments: args });

describe('bashTool', () => {
  const tool = bashTool({ shell: 'bash', defaultTimeoutS: 5, maxTimeoutS: 30, maxCommandChars: 10, descriptionSuffix: 'No network.' });

  it('builds one schema from the per-env limits', () => {
    expect(tool.name).toBe('bash');
    expect(tool.description).toBe('Run one command (bash) in /workspace and return its exit code, stdout and stderr. No network.');
    expect(tool.parameters).toMatchObject({
      required: ['command'],
      additionalProperties: false,
      properties: { command: { maxLength: 10 }, timeout_s: { type: 'integer', minimum: 1, maximum: 30 } },
    });
  });

  it('accepts a command with an optional whole-second timeout and refuses the rest', () => {
    const space = spaceWith(tool);
    expect(checkSpace(space, call({ command: 'ls' }))).toBeNull();
    expect(checkSpace(space, call({ command: 'ls', timeout_s: 30 }))).toBeNull();
    for (const bad of [
      {},
      { command: '' },
      { command: 'x'.repeat(11) },
      { command: 'ls', timeout_s: 0.5 },
      { command: 'ls', timeout_s: 31 },
      { command: 'ls', cwd: '/' },
    ]) {
      expect(checkSpace(space, call(bad)), JSON.stringify(bad)).not.toBeNull();
    }
  });

  it('refuses a default timeout above the maximum', () => {
    expect(() => bashTool({ shell: 'sh', defaultTimeoutS: 60, maxTimeoutS: 30, maxCommandChars: 1 })).toThrow(RangeError);
  });

  it('is the bash tool of shell-v0 and code-v0 (same shape, their own limits)', async () => {
    const codeEnv = createCodeEnv({ taskSet: new TaskSet(await loadTaskSets([TASKS_DIR])) });
    const bashOf = (space: Space) => (space as { tools: ReturnType<typeof bashTool>[] }).tools.find((t) => t.name === 'bash');
    const shell = bashOf(shellEnv.action_space);
    const code = bashOf(codeEnv.action_space);
    expect(shell).toEqual(
      bashTool({
        shell: 'POSIX sh with busybox tools',
        defaultTimeoutS: 10,
        maxTimeoutS: 30,
        maxCommandChars: 16_384,
        descriptionSuffix: 'stdout and stderr are each capped at 8 KiB. No network.',
      }),
    );
    expect(code).toEqual(bashTool({ shell: 'bash', defaultTimeoutS: 60, maxTimeoutS: 600, maxCommandChars: 100_000, descriptionSuffix: 'Output is capped.' }));
    expect(Object.keys((shell?.parameters as { properties: object }).properties)).toEqual(Object.keys((code?.parameters as { properties: object }).properties));
  });
});

describe('formatBashResult: the one observation format of a bash call', () => {
  const r = (o: Partial<ExecResult>): ExecResult => ({
    exit_code: 0,
    signal: null,
    stdout: '',
    stderr: '',
    truncated: false,
    timed_out: false,
    oom_killed: false,
    duration_ms: 1,
    ...o,
  });

  it('status line, then stdout and stderr as written', () => {
    expect(formatBashResult(r({ exit_code: 3, stdout: 'out\n', stderr: 'err\n' }), 10, 100)).toBe('exit code: 3\nstdout:\nout\n\nstderr:\nerr\n');
    expect(formatBashResult(r({}), 10, 100)).toBe('exit code: 0');
  });

  it("names the agent's faults: deadline, memory limit, signal; and the sandbox's output cut", () => {
    expect(formatBashResult(r({ exit_code: null, timed_out: true, signal: 'SIGKILL' }), 7, 100)).toBe('timed out after 7 s (killed)');
    expect(formatBashResult(r({ exit_code: null, timed_out: true, oom_killed: true }), 7, 100)).toBe(
      'timed out after 7 s (killed); memory limit exceeded: a process was killed',
    );
    expect(formatBashResult(r({ exit_code: null, oom_killed: true, signal: 'SIGKILL' }), 7, 100)).toBe('killed: memory limit exceeded (SIGKILL)');
    expect(formatBashResult(r({ exit_code: null, signal: 'SIGTERM' }), 7, 100)).toBe('killed by SIGTERM');
    expect(formatBashResult(r({ stdout: 'x', truncated: true }), 7, 100)).toBe('exit code: 0\nstdout:\nx\n[output truncated by the sandbox]');
  });

  it('caps each stream at maxChars keeping head and tail', () => {
    const out = formatBashResult(r({ stdout: `HEAD${'x'.repeat(1000)}TAIL` }), 7, 100);
    expect(out).toMatch(/^exit code: 0\nstdout:\nHEAD/);
    expect(out).toMatch(/characters truncated/);
    expect(out.endsWith('TAIL')).toBe(true);
    expect(out.length).toBeLessThan(200);
  });

  it("bashTimeoutS: the call's timeout, else the default, never above the limit", () => {
    expect(bashTimeoutS({}, 10, 30)).toBe(10);
    expect(bashTimeoutS({ timeout_s: 20 }, 10, 30)).toBe(20);
    expect(bashTimeoutS({ timeout_s: 25 }, 10, 12)).toBe(12);
  });
});
