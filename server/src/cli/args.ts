// The one argument parser of the sandgym CLI, its one usage-error type and the value checks every
// subcommand shares. Built on node's util.parseArgs (its tokens, in non-strict mode): parseArgs finds
// the options and values, and this module decides what is an error, so every subcommand words
// "unknown option", "needs a value" and "bad value" the same way and no message is ever matched.
import { parseArgs } from 'node:util';
import { parseSeed } from '../trajectory/trajectory.js';

/** Bad command-line usage: the command did nothing. Exit code EXIT.USAGE, printed with a --help hint. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
  /**
   * @param command the (sub)command whose usage was wrong, e.g. `tasks validate`; the hint names its
   * --help. Left out, main() fills in the top-level command.
   */
  constructor(
    message: string,
    readonly command?: string,
  ) {
    super(message);
  }
}

export interface OptionDef {
  type: 'string' | 'boolean';
  /** A string option that may be given more than once (values collected in order). */
  multiple?: boolean;
  short?: string;
}

export type OptionDefs = Record<string, OptionDef>;

type ValueOf<D extends OptionDef> = D['type'] extends 'boolean' ? boolean : D['multiple'] extends true ? string[] : string;
export type OptionValues<O extends OptionDefs> = { [K in keyof O]?: ValueOf<O[K]> };

export interface CommandDef<O extends OptionDefs> {
  /** As typed after `sandgym`: `serve`, `tasks validate`. */
  name: string;
  /** The --help text. */
  help: string;
  options: O;
  /** Positional arguments: their names for messages (`<env_id>`), and how many. Default none. */
  positionals?: { name: string; min: number; max: number };
  /** Accept `-- args...`, returned in `rest` untouched (play hands them to the in-process server). */
  rest?: boolean;
}

export interface Parsed<O extends OptionDefs> {
  values: OptionValues<O>;
  positionals: string[];
  rest: string[];
}

const HELP: OptionDef = { type: 'boolean', short: 'h' };

/**
 * Parses argv (what follows the command name). Returns null when --help/-h was given (the caller
 * prints def.help and exits 0); throws UsageError for an unknown option, a missing value, a value
 * given to a flag, or the wrong number of positionals.
 */
export function parseCommand<O extends OptionDefs>(def: CommandDef<O>, argv: readonly string[]): Parsed<O> | null {
  const options: OptionDefs = { ...def.options, help: HELP };
  const shorts = new Map(Object.entries(options).flatMap(([name, o]) => (o.short ? [[o.short, name] as const] : [])));
  const { tokens } = parseArgs({ args: [...argv], options, strict: false, allowPositionals: true, tokens: true });
  const usage = (message: string) => new UsageError(message, def.name);
  const values: Record<string, string | boolean | string[]> = {};
  const positionals: string[] = [];
  const rest: string[] = [];
  let afterTerminator = false;
  let help = false;
  for (const t of tokens) {
    if (t.kind === 'option-terminator') {
      if (!def.rest) throw usage(`'--' is not accepted here`);
      afterTerminator = true;
      continue;
    }
    if (t.kind === 'positional') {
      (afterTerminator ? rest : positionals).push(t.value);
      continue;
    }
    const o = options[t.name];
    if (!o) throw usage(`unknown option '${t.rawName}'`);
    if (t.name === 'help') {
      help = true;
      continue;
    }
    if (o.type === 'boolean') {
      if (t.inlineValue) throw usage(`option '${t.rawName}' takes no value`);
      values[t.name] = true;
      continue;
    }
    // parseArgs (non-strict) takes the next word as the value even when it is another option:
    // `--port --fixtures` means the value of --port is missing, not "--fixtures".
    if (t.value === undefined || (!t.inlineValue && isKnownOption(t.value, options, shorts))) throw usage(`option '${t.rawName}' needs a value`);
    if (o.multiple) ((values[t.name] ??= []) as string[]).push(t.value);
    else values[t.name] = t.value;
  }
  if (help) return null;
  const p = def.positionals ?? { name: '', min: 0, max: 0 };
  if (positionals.length < p.min) throw usage(`missing ${p.name}`);
  if (positionals.length > p.max) {
    throw usage(p.max === 0 ? `takes no positional arguments (got '${positionals[0]}')` : `unexpected argument '${positionals[p.max]}' (expected ${p.name})`);
  }
  return { values: values as OptionValues<O>, positionals, rest };
}

function isKnownOption(word: string, options: OptionDefs, shorts: Map<string, string>): boolean {
  if (word.startsWith('--')) return (word.slice(2).split('=')[0] as string) in options;
  return /^-[A-Za-z]$/.test(word) && shorts.has(word.slice(1));
}

/**
 * A command with subcommands (`tasks list`, `images build`): the subcommand and its argv, or 'help'
 * (`help`, -h, --help: print the help, exit 0) or 'missing' (no subcommand: print the help, exit 2,
 * as `sandgym` alone does). An unknown subcommand is a UsageError.
 */
export function subcommand<S extends string>(command: string, names: readonly S[], argv: readonly string[]): { sub: S; argv: string[] } | 'help' | 'missing' {
  const [first, ...rest] = argv;
  if (first === undefined) return 'missing';
  if (first === 'help' || first === '-h' || first === '--help') return 'help';
  if (!(names as readonly string[]).includes(first)) {
    throw new UsageError(
      first.startsWith('-')
        ? `expected a subcommand (${names.join(', ')}) before options, got '${first}'`
        : `unknown subcommand '${first}' (expected ${names.join(', ')})`,
      command,
    );
  }
  return { sub: first as S, argv: rest };
}

// --- value checks: each throws UsageError naming the option and what it accepts --------------------

export function intValue(option: string, raw: string, min: number, max: number, command?: string): number {
  const n = /^\d+$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max) throw new UsageError(`--${option} must be an integer in ${min}..${max}, got '${raw}'`, command);
  return n;
}

export function seedValue(option: string, raw: string, command?: string): number {
  const n = parseSeed(raw);
  if (n === null) throw new UsageError(`--${option} must be an integer in 0..2^53-1, got '${raw}'`, command);
  return n;
}

export function choiceValue<C extends string>(option: string, raw: string, choices: readonly C[], command?: string): C {
  if (!(choices as readonly string[]).includes(raw)) throw new UsageError(`--${option} must be one of ${choices.join(', ')}, got '${raw}'`, command);
  return raw as C;
}

/** A comma-separated list of distinct choices (`--splits train,eval`). */
export function choiceListValue<C extends string>(option: string, raw: string, choices: readonly C[], command?: string): C[] {
  const items = raw.split(',').map((s) => s.trim());
  if (items.some((s) => !(choices as readonly string[]).includes(s)) || new Set(items).size !== items.length) {
    throw new UsageError(`--${option} must be a comma-separated list of distinct values from ${choices.join(', ')}, got '${raw}'`, command);
  }
  return items as C[];
}

/** A number in (gt, max]. */
export function numberValue(option: string, raw: string, range: { gt: number; max: number }, command?: string): number {
  const n = /^\d*\.?\d+$/.test(raw) ? Number(raw) : NaN;
  if (!(n > range.gt && n <= range.max)) throw new UsageError(`--${option} must be a number in (${range.gt}, ${range.max}], got '${raw}'`, command);
  return n;
}

export function nonEmptyValue(option: string, raw: string, command?: string): string {
  if (raw.trim() === '') throw new UsageError(`--${option} must not be empty`, command);
  return raw;
}

export function wsUrlValue(option: string, raw: string, command?: string): string {
  if (!/^wss?:\/\/[^/]+/.test(raw)) throw new UsageError(`--${option} must be a ws:// or wss:// URL, got '${raw}'`, command);
  return raw;
}

export function jsonObjectValue(option: string, raw: string, command?: string): Record<string, unknown> {
  let v: unknown;
  try {
    v = JSON.parse(raw);
  } catch (err) {
    throw new UsageError(`--${option} must be a JSON object: ${(err as Error).message}`, command);
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new UsageError(`--${option} must be a JSON object, got ${raw}`, command);
  return v as Record<string, unknown>;
}
