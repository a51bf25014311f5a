// Rendering for the play REPL: plain text with optional ANSI colour. Pure functions returning strings,
// so the session can be tested without a terminal.
import { toolUsage } from './shorthand.js';
import { formatNumber } from '../trajectory/trajectory.js';
import type { EnvSpec, Space, StepResult, Tool } from '#protocol/index.js';
import { paramsOf, toolsOf, type JsonSchema } from './types.js';

export interface Style {
  readonly colour: boolean;
  bold(s: string): string;
  dim(s: string): string;
  red(s: string): string;
  green(s: string): string;
  yellow(s: string): string;
  cyan(s: string): string;
  magenta(s: string): string;
}

const sgr = (on: string, off: string) => (s: string) => `\x1b[${on}m${s}\x1b[${off}m`;
const id = (s: string) => s;

export function makeStyle(colour: boolean): Style {
  if (!colour) return { colour, bold: id, dim: id, red: id, green: id, yellow: id, cyan: id, magenta: id };
  return {
    colour,
    bold: sgr('1', '22'),
    dim: sgr('2', '22'),
    red: sgr('31', '39'),
    green: sgr('32', '39'),
    yellow: sgr('33', '39'),
    cyan: sgr('36', '39'),
    magenta: sgr('35', '39'),
  };
}

/** Colour when writing to a terminal, unless NO_COLOR is set (https://no-color.org) or TERM is dumb. */
export function wantsColour(stream: { isTTY?: boolean }, env: Record<string, string | undefined>): boolean {
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return false;
  if (env.FORCE_COLOR !== undefined && env.FORCE_COLOR !== '0') return true;
  return stream.isTTY === true && env.TERM !== 'dumb';
}

/** One line when short, indented JSON otherwise. */
export function formatValue(v: unknown, width = 100): string {
  if (v === undefined) return 'undefined';
  const flat = JSON.stringify(v);
  if (flat === undefined) return String(v);
  if (flat.length <= width) return flat;
  return JSON.stringify(v, null, 2);
}

export function indent(text: string, pad = '  '): string {
  return text
    .split('\n')
    .map((l) => (l === '' ? l : pad + l))
    .join('\n');
}

/** Observations that are strings are shown verbatim (they are usually prompts or tool output). */
export function formatObservation(obs: unknown): string {
  return indent(typeof obs === 'string' ? (obs === '' ? '""' : obs) : formatValue(obs));
}

export { formatNumber };

export function describeSpace(space: Space): string {
  switch (space.type) {
    case 'text':
      return `text (max ${String(space.max_length)} chars)`;
    case 'discrete': {
      const start = typeof space.start === 'number' ? space.start : 0;
      const n = typeof space.n === 'number' ? space.n : 0;
      return `discrete ${start}..${start + n - 1}`;
    }
    case 'box':
      return `box shape ${JSON.stringify(space.shape)} ${String(space.dtype)} [${String(space.low)}, ${String(space.high)}]`;
    case 'tool_call':
      return `tool_call (${Array.isArray(space.tools) ? space.tools.length : 0} tools)`;
    case 'dict':
      return `dict {${Array.isArray(space.spaces) ? space.spaces.map((s: { key?: string }) => s.key).join(', ') : ''}}`;
    default:
      return space.type;
  }
}

function schemaType(s: JsonSchema | undefined): string {
  if (!s) return 'any';
  if (Array.isArray(s.enum)) return s.enum.map((e) => JSON.stringify(e)).join(' | ');
  if (Array.isArray(s.type)) return s.type.join(' | ');
  if (s.type === 'array' && s.items) return `${schemaType(s.items)}[]`;
  return typeof s.type === 'string' ? s.type : 'any';
}

export function formatTool(tool: Tool, st: Style): string {
  const lines = [`${st.bold(st.cyan(toolUsage(tool)))}${tool.description ? `  ${st.dim(tool.description)}` : ''}`];
  const props = paramsOf(tool).properties ?? {};
  const required = paramsOf(tool).required ?? [];
  for (const [name, schema] of Object.entries(props)) {
    const opt = required.includes(name) ? '' : ', optional';
    const desc = typeof schema.description === 'string' ? `  ${st.dim(schema.description)}` : '';
    lines.push(`    ${name}: ${schemaType(schema)}${opt}${desc}`);
  }
  return lines.join('\n');
}

export function formatSpec(spec: EnvSpec, st: Style): string {
  const out: string[] = [];
  out.push(`${st.bold(spec.id)}${spec.description ? ` ${st.dim('·')} ${spec.description}` : ''}`);
  const facts = [
    `action: ${describeSpace(spec.action_space)}`,
    `observation: ${describeSpace(spec.observation_space)}`,
    `max steps: ${spec.max_episode_steps ?? 'unlimited'}`,
  ];
  if (spec.reward_range) facts.push(`reward range: [${spec.reward_range.join(', ')}]`);
  if (spec.stochastic) facts.push('stochastic');
  out.push(`  ${facts.join('   ')}`);
  if (spec.rubric && spec.rubric.length > 0) {
    out.push(`  rubric: ${spec.rubric.map((r) => `${r.name} ×${r.weight}`).join(', ')}`);
  }
  if (spec.tasks) {
    out.push(
      `  tasks: ${Object.entries(spec.tasks.splits)
        .map(([s, n]) => `${s} ${n}`)
        .join(', ')}  ${st.dim('(--task ID / --split S, or :task ID)')}`,
    );
  }
  const tools = toolsOf(spec);
  if (tools.length > 0) {
    out.push(st.bold('tools:'));
    for (const t of tools) out.push(indent(formatTool(t, st)));
  }
  return out.join('\n');
}

/** How to type an action for this env, shown once after the spec. */
export function inputHint(spec: EnvSpec, st: Style): string {
  const t = spec.action_space.type;
  const first = toolsOf(spec)[0];
  const hint =
    t === 'tool_call'
      ? 'type a tool call: `name args` (e.g. ' + (first ? toolUsage(first) : 'tool') + '), `name {json}`, heredoc `<<EOF`, or raw JSON'
      : t === 'text'
        ? 'type the action text (the line is sent as is; `<<EOF` for several lines)'
        : t === 'discrete'
          ? 'type a number'
          : `type a JSON value for the ${t} space`;
  return st.dim(`${hint}; :help for commands`);
}

export function formatComponents(components: unknown, st: Style): string | null {
  if (!components || typeof components !== 'object' || Array.isArray(components)) return null;
  const entries = Object.entries(components as Record<string, unknown>);
  if (entries.length === 0) return null;
  return entries.map(([k, v]) => `${k} ${typeof v === 'number' ? colourNumber(v, st) : formatValue(v)}`).join(st.dim(' · '));
}

function colourNumber(n: number, st: Style): string {
  const s = formatNumber(n);
  return n > 0 ? st.green(s) : n < 0 ? st.red(s) : s;
}

export function rule(title: string, st: Style, width = 60): string {
  const text = `── ${title} `;
  return st.dim(text + '─'.repeat(Math.max(4, width - text.length)));
}

export interface StepView {
  step: number;
  action: unknown;
  reply: StepResult;
  episodeReturn: number;
}

export function formatStep(v: StepView, st: Style): string {
  const { reply } = v;
  const out: string[] = [];
  out.push(rule(`step ${v.step}`, st));
  out.push(`${st.dim('action')} ${formatValue(v.action)}`);
  out.push(st.bold('observation:'));
  out.push(formatObservation(reply.observation));
  const flags = [
    `reward ${st.bold(colourNumber(reply.reward, st))}`,
    `return ${formatNumber(v.episodeReturn)}`,
    `terminated ${reply.terminated ? st.yellow('yes') : 'no'}`,
    `truncated ${reply.truncated ? st.yellow('yes') : 'no'}`,
  ];
  out.push(flags.join('   '));
  const { reward_components: components, ...rest } = reply.info ?? {};
  const comp = formatComponents(components, st);
  if (comp) out.push(`  ${st.dim('components')} ${comp}`);
  if (Object.keys(rest).length > 0) out.push(`${st.dim('info')} ${indent(formatValue(rest)).trimStart()}`);
  if (reply.terminated || reply.truncated) {
    out.push(
      st.yellow(
        `episode over (${reply.terminated ? 'terminated' : 'truncated'}) after ${v.step} step${v.step === 1 ? '' : 's'}, return ${formatNumber(v.episodeReturn)}; :reset for a new one`,
      ),
    );
  }
  return out.join('\n');
}

export function formatReset(obs: unknown, info: Record<string, unknown>, label: string, st: Style): string {
  const out = [rule(label, st), st.bold('observation:'), formatObservation(obs)];
  if (info && Object.keys(info).length > 0) out.push(`${st.dim('info')} ${indent(formatValue(info)).trimStart()}`);
  return out.join('\n');
}

/** What to do next, per protocol error code: every error gets a readable line, never a stack trace. */
const HINTS: Record<string, string> = {
  INVALID_ACTION: 'the action does not fit the action space; the episode continues, try again',
  RESET_NEEDED: 'the episode is over (or the session failed): type :reset',
  ENV_ERROR: 'the env raised an error; the session needs :reset',
  SANDBOX_ERROR: 'the sandbox failed (infrastructure, not a reward of 0); :reset to get a fresh one',
  TIMEOUT: 'the step exceeded the server deadline; the session needs :reset',
  INVALID_ARGUMENT: 'bad seed, reset options or make kwargs',
  UNKNOWN_ENV: 'no env with that id; `sandgym envs` lists them',
  UNKNOWN_SESSION: 'the session is gone; :reset makes a new one',
  CAPACITY: 'the server is at capacity; retry shortly',
  UNAUTHORIZED: 'the server wants a token: pass --token',
  CONNECTION_CLOSED: 'the connection is gone; restart sandgym play',
  REQUEST_TIMEOUT: 'no reply from the server in time',
  SHUTTING_DOWN: 'the server is shutting down',
  TOO_LARGE: 'the message exceeds the server limit',
};

export interface ErrorLike {
  code?: unknown;
  message?: unknown;
  details?: unknown;
}

export function formatError(err: unknown, st: Style): string {
  const e = (err && typeof err === 'object' ? err : { message: String(err) }) as ErrorLike;
  const code = typeof e.code === 'string' ? e.code : 'ERROR';
  const message = typeof e.message === 'string' ? e.message : String(err);
  const lines = [`${st.red(st.bold(`error ${code}`))}: ${message}`];
  if (e.details && typeof e.details === 'object' && Object.keys(e.details).length > 0) lines.push(`  ${st.dim('details')} ${formatValue(e.details)}`);
  const hint = HINTS[code];
  if (hint) lines.push(`  ${st.dim(hint)}`);
  return lines.join('\n');
}
