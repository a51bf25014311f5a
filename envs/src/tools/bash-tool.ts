// The `bash` tool every sandboxed env offers, declared once: shell-v0 and code-v0 used to declare it
// separately and the two schemas drifted (fractional vs integer timeouts, different wording). An env
// passes what really differs (its shell, command size and timeout limits, output caps) and gets the
// tool spec for its tool_call action space, and formats a command's result as the one observation format
// (`formatBashResult`). The env still runs the command itself (its shell, its workdir); this is the contract.
import type { ToolCallSpace } from '#protocol/index.js';
import type { ExecResult } from '../sandbox-api.js';

export type ToolSpec = ToolCallSpace['tools'][number];

export interface BashToolParams {
  /** What interprets the command, as the agent should read it: `bash`, `POSIX sh with busybox tools`. */
  shell: string;
  /** Timeout applied when the call gives no `timeout_s` (seconds). */
  defaultTimeoutS: number;
  /** Largest `timeout_s` a call may ask for (seconds); the env's sandbox limit must allow it. */
  maxTimeoutS: number;
  /** Largest command, in characters. */
  maxCommandChars: number;
  /** Working directory of the command. Default /workspace. */
  workdir?: string;
  /** Env-specific sentence(s) appended to the description: output caps, network, ... */
  descriptionSuffix?: string;
}

export function bashTool(p: BashToolParams): ToolSpec {
  if (!(Number.isInteger(p.defaultTimeoutS) && Number.isInteger(p.maxTimeoutS) && p.defaultTimeoutS >= 1 && p.defaultTimeoutS <= p.maxTimeoutS)) {
    throw new RangeError(`bashTool: need integers 1 <= defaultTimeoutS (${p.defaultTimeoutS}) <= maxTimeoutS (${p.maxTimeoutS})`);
  }
  const workdir = p.workdir ?? '/workspace';
  const suffix = p.descriptionSuffix ? ` ${p.descriptionSuffix}` : '';
  return {
    name: 'bash',
    description: `Run one command (${p.shell}) in ${workdir} and return its exit code, stdout and stderr.${suffix}`,
    parameters: {
      type: 'object',
      properties: {
        command: { type: 'string', minLength: 1, maxLength: p.maxCommandChars, description: 'the command line to run' },
        timeout_s: {
          type: 'integer',
          minimum: 1,
          maximum: p.maxTimeoutS,
          description: `seconds before the command is killed (default ${p.defaultTimeoutS}, at most ${p.maxTimeoutS})`,
        },
      },
      required: ['command'],
      additionalProperties: false,
    },
  };
}

/** The timeout of one call in whole seconds: the call's `timeout_s` (the schema made it an integer in range), else the default, never above `limitS`. */
export function bashTimeoutS(args: { timeout_s?: unknown }, defaultTimeoutS: number, limitS: number): number {
  return Math.min(limitS, typeof args.timeout_s === 'number' ? args.timeout_s : defaultTimeoutS);
}

/** Keeps the head and the tail of long text, with a marker saying how much was cut. */
export function capText(s: string, max: number): string {
  if (s.length <= max) return s;
  const head = Math.floor(max * 0.6);
  const tail = max - head;
  return `${s.slice(0, head)}\n[... ${s.length - head - tail} characters truncated ...]\n${s.slice(s.length - tail)}`;
}

/**
 * The observation of one `bash` call, the same in every sandboxed env: a status line (`exit code: N`,
 * `timed out after N s (killed)`, `killed: memory limit exceeded (...)`, `killed by SIG...`), then
 * `stdout:` and `stderr:` blocks as the command wrote them (each capped at `maxChars`, head and tail
 * kept), then a note when the sandbox cut the output. Faults the agent causes (its deadline, the memory
 * limit, kill -1) are observations: the episode goes on.
 */
export function formatBashResult(r: ExecResult, timeoutS: number, maxChars: number): string {
  const oom = r.oom_killed && (r.timed_out || !r.signal) ? '; memory limit exceeded: a process was killed' : '';
  const head = r.timed_out
    ? `timed out after ${timeoutS} s (killed)`
    : r.oom_killed
      ? `killed: memory limit exceeded (${r.signal ?? 'a process was killed'})`
      : r.exit_code !== null
        ? `exit code: ${r.exit_code}`
        : `killed by ${r.signal ?? 'a signal'}`;
  const parts = [head + oom];
  if (r.stdout) parts.push(`stdout:\n${capText(r.stdout, maxChars)}`);
  if (r.stderr) parts.push(`stderr:\n${capText(r.stderr, maxChars)}`);
  if (r.truncated) parts.push('[output truncated by the sandbox]');
  return parts.join('\n');
}
