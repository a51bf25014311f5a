// The `bash` tool every sandboxed env offers, declared once: shell-v0 and code-v0 used to declare it
// separately and the two schemas drifted (fractional vs integer timeouts, different wording). An env
// passes what really differs (its shell, command size and timeout limits, output caps) and gets the
// tool spec for its tool_call action space. The env still runs the command itself; this is the contract.
import type { ToolCallSpace } from '../../../protocol/src/index.js';

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
