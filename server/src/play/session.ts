// The REPL core: takes one input line, returns what to print. No terminal, socket or fs access of its
// own (those come in through PlayBackend / PlayFiles), so every behaviour is unit-testable; cli.ts is the
// thin readline layer on top.
import type { PlayBackend, PlayEnvHandle, PlayFiles } from './backend.js';
import { formatError, formatNumber, formatReset, formatSpec, formatStep, formatValue, inputHint, makeStyle, rule, type Style } from './format.js';
import { findHeredoc, parseAction } from './shorthand.js';
import { diffFields, replaySummary, replayTrajectory } from '../trajectory/replay.js';
import { fromJsonl, parseSeed, toJsonl, type ResetRecord, type StepRecord, type Trajectory } from '../trajectory/trajectory.js';
import type { EnvSpec } from '#protocol/index.js';

export interface PlaySessionOptions {
  backend: PlayBackend;
  files: PlayFiles;
  envId: string;
  kwargs?: Record<string, unknown>;
  seed?: number;
  task?: string;
  split?: string;
  /** Further reset options (task and split are merged in). */
  options?: Record<string, unknown>;
  colour?: boolean;
  /** Source of seeds when none is given, so every episode can be replayed exactly. */
  randomSeed?: () => number;
}

export interface LineResult {
  output: string;
  /** True once the user asked to quit. */
  quit: boolean;
}

export const PROMPT = 'sandgym> ';
export const CONTINUATION_PROMPT = '... ';

export const HELP = `commands:
  <action>           send a step (tool shorthand, raw JSON, text or a number depending on the action space)
  tool args <<END    start a multi-line last argument; finish it with a line containing only END
  :reset [seed]      start a new episode (random seed when omitted; the seed is printed)
  :task ID           reset onto task ID (options.task_id); ":task -" clears it
  :split S           reset within split S (options.split); ":split -" clears it
  :spec [json]       show the env spec (json: the raw env_spec)
  :history           the actions and rewards of this episode
  :save FILE.jsonl   save this episode (line 1: the reset, then one line per step)
  :replay FILE.jsonl re-run a saved episode and show where rewards differ
  :help              this text
  :quit              leave (also Ctrl-D)
  ::text             send a text action that starts with ':'`;

interface PendingHeredoc {
  head: string;
  marker: string;
  lines: string[];
}

interface Outcome {
  ok: boolean;
  output: string;
}

export class PlaySession {
  readonly style: Style;
  private env: PlayEnvHandle | null = null;
  private kwargs: Record<string, unknown> | undefined;
  private options: Record<string, unknown> = {};
  private resetRecord: ResetRecord | null = null;
  private steps: StepRecord[] = [];
  private pending: PendingHeredoc | null = null;
  private readonly randomSeed: () => number;

  constructor(private readonly opts: PlaySessionOptions) {
    this.style = makeStyle(opts.colour ?? false);
    this.kwargs = opts.kwargs;
    this.options = { ...(opts.options ?? {}) };
    if (opts.task !== undefined) this.options.task_id = opts.task;
    if (opts.split !== undefined) this.options.split = opts.split;
    this.randomSeed = opts.randomSeed ?? (() => Math.floor(Math.random() * 1_000_000));
  }

  get prompt(): string {
    return this.pending ? CONTINUATION_PROMPT : PROMPT;
  }

  get spec(): EnvSpec | null {
    return this.env?.spec ?? null;
  }

  /** The current episode (null before the first successful reset). */
  get trajectory(): Trajectory | null {
    return this.resetRecord ? { reset: this.resetRecord, steps: [...this.steps] } : null;
  }

  /** Makes the env and resets it. ok=false when the env could not be made (the CLI exits then). */
  async start(): Promise<Outcome> {
    const st = this.style;
    try {
      this.env = await this.opts.backend.make(this.opts.envId, this.kwargs);
    } catch (err) {
      return { ok: false, output: formatError(err, st) };
    }
    const reset = await this.reset(this.opts.seed);
    return { ok: true, output: [formatSpec(this.env.spec, st), inputHint(this.env.spec, st), reset.output].join('\n') };
  }

  async close(): Promise<void> {
    const env = this.env;
    this.env = null;
    if (env) await env.close().catch(() => undefined);
  }

  /** Handles one line of input. Never throws: every failure becomes printed text. */
  async handleLine(line: string): Promise<LineResult> {
    try {
      return await this.dispatch(line);
    } catch (err) {
      return { output: formatError(err, this.style), quit: false };
    }
  }

  private async dispatch(line: string): Promise<LineResult> {
    const done = (output: string, quit = false): LineResult => ({ output, quit });
    if (this.pending) {
      if (line.trim() !== this.pending.marker) {
        this.pending.lines.push(line);
        return done('');
      }
      const { head, lines } = this.pending;
      this.pending = null;
      return done(await this.act(head, lines.join('\n')));
    }
    if (line.startsWith(':') && !line.startsWith('::')) return this.command(line.slice(1).trim());
    const text = line.startsWith('::') ? line.slice(1) : line;
    if (text.trim() === '') return done('');
    const heredoc = findHeredoc(text);
    if (heredoc) {
      this.pending = { head: heredoc.head, marker: heredoc.marker, lines: [] };
      return done(this.style.dim(`(multi-line input: finish with a line containing only ${heredoc.marker})`));
    }
    return done(await this.act(text, undefined));
  }

  private async command(cmd: string): Promise<LineResult> {
    const [name = '', ...args] = cmd.split(/\s+/);
    const arg = args.join(' ');
    const st = this.style;
    const done = (output: string, quit = false): LineResult => ({ output, quit });
    switch (name) {
      case 'q':
      case 'quit':
      case 'exit':
        return done('bye', true);
      case 'h':
      case 'help':
      case '?':
        return done(HELP);
      case 'spec':
        if (!this.env) return done(st.red('no env'));
        return done(arg === 'json' ? JSON.stringify(this.env.spec, null, 2) : formatSpec(this.env.spec, st));
      case 'reset': {
        if (arg === '') return done((await this.reset(undefined)).output);
        const seed = parseSeed(arg);
        if (seed === null) return done(st.red(`:reset takes an integer seed between 0 and 2^53-1, got '${arg}'`));
        return done((await this.reset(seed)).output);
      }
      case 'task':
        return done(await this.setOption('task_id', arg));
      case 'split':
        return done(await this.setOption('split', arg));
      case 'history':
        return done(this.history());
      case 'save':
        return done(await this.save(arg));
      case 'replay':
        return done(await this.replay(arg));
      default:
        return done(`${st.red(`unknown command ':${name}'`)}\n${HELP}`);
    }
  }

  private async setOption(key: string, value: string): Promise<string> {
    if (value === '') return this.style.dim(`${key}: ${this.options[key] === undefined ? '(not set)' : String(this.options[key])}`);
    if (value === '-') delete this.options[key];
    else this.options[key] = value;
    return (await this.reset(this.resetRecord?.seed ?? undefined)).output;
  }

  /** Resets with an explicit seed (chosen here when none is given) so the episode can be replayed. */
  private async reset(seed: number | undefined): Promise<Outcome> {
    try {
      return { ok: true, output: await this.resetEnv(seed) };
    } catch (err) {
      return { ok: false, output: formatError(err, this.style) };
    }
  }

  /** reset() that throws; returns the formatted reset. */
  private async resetEnv(seed: number | undefined): Promise<string> {
    const st = this.style;
    if (!this.env) throw new Error('no env');
    const chosen = seed ?? this.randomSeed();
    const options = { ...this.options };
    const reply = await this.env.reset({ seed: chosen, options });
    const info = reply.info ?? {};
    this.resetRecord = {
      type: 'reset',
      env_id: this.env.spec.id,
      ...(this.kwargs ? { kwargs: this.kwargs } : {}),
      seed: chosen,
      options,
      observation: reply.observation,
      info,
    };
    this.steps = [];
    const label = `reset seed ${chosen}${Object.keys(options).length > 0 ? ` options ${formatValue(options)}` : ''}`;
    return formatReset(reply.observation, info, label, st);
  }

  private async act(input: string, heredocBody: string | undefined): Promise<string> {
    const st = this.style;
    if (!this.env) return st.red('no env');
    const parsed = parseAction(input, this.env.spec, heredocBody);
    if (!parsed.ok) return `${st.red('cannot parse action')}: ${parsed.error}`;
    try {
      const reply = await this.env.step(parsed.action);
      const record: StepRecord = {
        type: 'step',
        step: this.steps.length + 1,
        action: parsed.action,
        observation: reply.observation,
        reward: reply.reward,
        terminated: reply.terminated,
        truncated: reply.truncated,
        info: reply.info ?? {},
      };
      this.steps.push(record);
      return formatStep({ step: record.step, action: parsed.action, reply: record, episodeReturn: this.episodeReturn() }, st);
    } catch (err) {
      return formatError(err, st);
    }
  }

  private episodeReturn(): number {
    return this.steps.reduce((sum, s) => sum + s.reward, 0);
  }

  private history(): string {
    const st = this.style;
    const r = this.resetRecord;
    if (!r) return st.dim('no episode yet');
    const opts = Object.keys(r.options).length > 0 ? ` options ${formatValue(r.options)}` : '';
    const lines = [st.dim(`episode of ${r.env_id}, seed ${r.seed}${opts}`)];
    if (this.steps.length === 0) lines.push(st.dim('  no steps yet'));
    for (const s of this.steps) {
      const end = s.terminated ? ' [terminated]' : s.truncated ? ' [truncated]' : '';
      lines.push(`  ${String(s.step).padStart(3)}  reward ${formatNumber(s.reward).padStart(7)}  ${formatValue(s.action, 70)}${end}`);
    }
    lines.push(`  return ${formatNumber(this.episodeReturn())} over ${plural(this.steps.length, 'step')}`);
    return lines.join('\n');
  }

  private async save(path: string): Promise<string> {
    const st = this.style;
    if (path === '') return st.red(':save needs a file name, e.g. :save episode.jsonl');
    const t = this.trajectory;
    if (!t) return st.red('nothing to save: no episode yet');
    try {
      await this.opts.files.writeText(path, toJsonl(t));
    } catch (err) {
      return `${st.red('cannot save')}: ${(err as Error).message}`;
    }
    return `saved ${plural(t.steps.length, 'step')} to ${path}`;
  }

  /** Re-runs a saved episode with the shared replay semantics (replay.ts) and reports the differences. */
  private async replay(path: string): Promise<string> {
    const st = this.style;
    if (path === '') return st.red(':replay needs a file name, e.g. :replay episode.jsonl');
    let saved: Trajectory;
    try {
      saved = fromJsonl(await this.opts.files.readText(path));
    } catch (err) {
      return `${st.red('cannot replay')}: ${(err as Error).message}`;
    }
    const out: string[] = [rule(`replay ${path}: ${plural(saved.steps.length, 'step')} of ${saved.reset.env_id}`, st)];
    if (saved.reset.seed === null) out.push(st.yellow('warning: the file has no seed; the replay may start from a different state'));
    const report = await replayTrajectory(
      saved,
      {
        isCurrent: (envId, kwargs) => this.env?.spec.id === envId && JSON.stringify(this.kwargs ?? null) === JSON.stringify(kwargs ?? null),
        make: async (envId, kwargs) => {
          await this.close();
          this.env = await this.opts.backend.make(envId, kwargs);
          this.kwargs = kwargs;
          out.push(st.dim(`switched to ${envId}`));
        },
        reset: async ({ seed, options }) => {
          this.options = { ...options };
          await this.resetEnv(seed);
          return this.resetRecord as ResetRecord;
        },
        step: async (action) => {
          const reply = await (this.env as PlayEnvHandle).step(action);
          this.steps.push({
            type: 'step',
            step: this.steps.length + 1,
            action,
            observation: reply.observation,
            reward: reply.reward,
            terminated: reply.terminated,
            truncated: reply.truncated,
            info: reply.info ?? {},
          });
          return reply;
        },
      },
      {
        onReset: (differs) => {
          if (differs) out.push(st.yellow('  the reset observation differs from the saved one'));
        },
        onStep: ({ step, saved: rec, replayed, diffs }) => {
          const rewardDiffers = diffs.some((d) => d.field === 'reward');
          const mark = diffs.length === 0 ? st.green('same') : st.red(`DIFFERS (${diffFields(diffs)})`);
          const reward = `reward ${formatNumber(replayed.reward)}${rewardDiffers ? ` (saved ${formatNumber(rec.reward)})` : ''}`;
          out.push(`  step ${String(step).padStart(3)}  ${reward}  ${mark}  ${st.dim(formatValue(rec.action, 60))}`);
        },
      },
    );
    if (report.stop?.reason === 'error')
      out.push(`  ${report.stop.step === 0 ? 'make/reset' : `step ${report.stop.step}`}: ${formatError(report.stop.error, st)}`);
    const summary = replaySummary(report, formatNumber);
    out.push(report.verdict === 'same' ? st.green(summary) : st.red(summary));
    return out.join('\n');
  }
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}
