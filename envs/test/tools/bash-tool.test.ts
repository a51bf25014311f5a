// The one `bash` tool definition: both sandboxed envs advertise it, and a call is checked against it
// by the same space checker the server runs before env.step.
import { describe, expect, it } from 'vitest';
import { checkSpace, type Space } from '../../../protocol/src/index.js';
import { shellEnv } from '../../src/builtin/shell/shell-env.js';
import { createCodeEnv } from '../../src/code/code-env.js';
import { loadTaskSets, TaskSet } from '../../src/code/task-loader.js';
import { bashTool } from '../../src/tools/bash-tool.js';
import { TASKS_DIR } from '../code/helpers.js';

const spaceWith = (tool: ReturnType<typeof bashTool>): Space => ({ type: 'tool_call', tools: [tool] });
const call = (args: Record<string, unknown>) => ({ name: 'bash', arguments: args });

describe('bashTool', () => {
  const tool = bashTool({ shell: 'bash', defaultTimeoutS: 5, maxTimeoutS: 30, maxCommandChars: 10, descriptionSuffix: 'No network.' });

  it('builds one schema from the per-env limits', () => {
    expect(tool.name).toBe('bash');
    expect(tool.description).toBe('Run one command (bash) in /workspace and return its exit code, stdout and stderr. No network.');
    expect(tool.parameters).toMatchObject({ required: ['command'], additionalProperties: false, properties: { command: { maxLength: 10 }, timeout_s: { type: 'integer', minimum: 1, maximum: 30 } } });
  });

  it('accepts a command with an optional whole-second timeout and refuses the rest', () => {
    const space = spaceWith(tool);
    expect(checkSpace(space, call({ command: 'ls' }))).toBeNull();
    expect(checkSpace(space, call({ command: 'ls', timeout_s: 30 }))).toBeNull();
    for (const bad of [{}, { command: '' }, { command: 'x'.repeat(11) }, { command: 'ls', timeout_s: 0.5 }, { command: 'ls', timeout_s: 31 }, { command: 'ls', cwd: '/' }]) {
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
    expect(shell).toEqual(bashTool({ shell: 'POSIX sh with busybox tools', defaultTimeoutS: 10, maxTimeoutS: 30, maxCommandChars: 16_384, descriptionSuffix: 'stdout and stderr are each capped at 8 KiB. No network.' }));
    expect(code).toEqual(bashTool({ shell: 'bash', defaultTimeoutS: 60, maxTimeoutS: 600, maxCommandChars: 100_000, descriptionSuffix: 'Output is capped.' }));
    expect(Object.keys((shell?.parameters as { properties: object }).properties)).toEqual(Object.keys((code?.parameters as { properties: object }).properties));
  });
});
