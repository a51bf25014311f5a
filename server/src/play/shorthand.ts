// Turns what a person types into a wire action, by the env's action space. Pure (no I/O) so both the
// REPL and its tests use it directly.
//
// tool_call spaces accept raw JSON (`{"name": ..., "arguments": {...}}`) or a shorthand:
//   `bash ls -la`             -> the whole rest of the line goes to the tool's single required parameter
//   `submit 42`               -> ... coerced to that parameter's JSON Schema type (number here)
//   `bash sleep 9 timeout_s=5`-> optional parameters as key=value at either end of such a line
//   `write_file a.py <<EOF`   -> positional words fill parameters in order (required first); a heredoc
//                                body (collected by the caller until the `EOF` line) is the last positional
//   `read_file path=a.py start_line=3`   -> key=value for any named parameter
//   `echo {"text": "hi"}`     -> a JSON object is taken as the arguments verbatim
// text spaces take the raw line (or a heredoc body) as the action, discrete spaces a number, and every
// other space a JSON value.
import type { EnvSpec, Tool } from '#protocol/index.js';
import { paramsOf, toolsOf, type JsonSchema } from './types.js';

export type ParseResult = { ok: true; action: unknown } | { ok: false; error: string };

export interface Heredoc {
  /** The line with the `<<MARKER` removed. */
  head: string;
  marker: string;
}

const HEREDOC_RE = /^(.*?)\s*<<-?\s*(['"]?)([A-Za-z_][A-Za-z0-9_]*)\2\s*$/s;

/** Detects a trailing `<<EOF` (or `<<'EOF'`, `<<"EOF"`, `<<-EOF`) that opens a multi-line body. */
export function findHeredoc(line: string): Heredoc | null {
  const m = HEREDOC_RE.exec(line);
  if (!m) return null;
  return { head: m[1] ?? '', marker: m[3] ?? '' };
}

/** Parses one input (a line, plus the heredoc body when the line opened one) into an action. */
export function parseAction(input: string, spec: EnvSpec, heredocBody?: string): ParseResult {
  const space = spec.action_space;
  switch (space.type) {
    case 'tool_call':
      return parseToolCall(input, toolsOf(spec), heredocBody);
    case 'text':
      // The line is the action verbatim: leading/trailing spaces may matter to the env.
      if (heredocBody === undefined) return { ok: true, action: input };
      return { ok: true, action: input.trim() === '' ? heredocBody : `${input}\n${heredocBody}` };
    case 'discrete': {
      const t = (heredocBody ?? input).trim();
      if (/^-?\d+$/.test(t)) return { ok: true, action: Number(t) };
      return parseJson(t, 'discrete');
    }
    default:
      return parseJson((heredocBody ?? input).trim(), space.type);
  }
}

function parseJson(text: string, spaceType: string): ParseResult {
  if (text === '') return { ok: false, error: `empty action: a ${spaceType} space takes a JSON value` };
  try {
    return { ok: true, action: JSON.parse(text) };
  } catch (err) {
    return { ok: false, error: `not valid JSON for a ${spaceType} action: ${(err as Error).message}` };
  }
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function parseToolCall(input: string, tools: Tool[], heredocBody: string | undefined): ParseResult {
  const trimmed = input.trim();
  if (trimmed.startsWith('{') && heredocBody === undefined) {
    const parsed = parseJson(trimmed, 'tool_call');
    if (!parsed.ok) return parsed;
    if (!isPlainObject(parsed.action)) return { ok: false, error: 'a tool call is a JSON object {"name": ..., "arguments": {...}}' };
    // `{"name": "x"}` alone is a common slip; the wire needs `arguments`.
    const call = parsed.action;
    return { ok: true, action: 'arguments' in call ? call : { ...call, arguments: {} } };
  }
  if (trimmed === '') return { ok: false, error: `empty action: type a tool call (${tools.map((t) => t.name).join(', ')}) or :help` };
  const m = /^(\S+)\s*([\s\S]*)$/.exec(trimmed);
  const name = m?.[1] ?? '';
  const rest = m?.[2] ?? '';
  const tool = tools.find((t) => t.name === name);
  if (!tool) {
    return { ok: false, error: `unknown tool '${name}'; tools: ${tools.map((t) => t.name).join(', ') || '(none)'} (or type a raw JSON action)` };
  }
  const args = buildArguments(tool, rest, heredocBody);
  if (!args.ok) return args;
  return { ok: true, action: { name: tool.name, arguments: args.action } };
}

/** Parameter names in the order positional words fill them: required ones first, then optional. */
export function positionalOrder(tool: Tool): string[] {
  const props = Object.keys(paramsOf(tool).properties ?? {});
  const required = (paramsOf(tool).required ?? []).filter((r) => typeof r === 'string');
  const requiredInOrder = [...props.filter((p) => required.includes(p)), ...required.filter((r) => !props.includes(r))];
  return [...requiredInOrder, ...props.filter((p) => !required.includes(p))];
}

/** A one-line usage hint: `write_file <path> <content> [mode]`. */
export function toolUsage(tool: Tool): string {
  const required = paramsOf(tool).required ?? [];
  const parts = positionalOrder(tool).map((p) => (required.includes(p) ? `<${p}>` : `[${p}]`));
  return [tool.name, ...parts].join(' ');
}

/** The parameter that takes the whole rest of the line, when the tool has an obvious one. */
function wholeLineParam(tool: Tool): string | null {
  const props = Object.keys(paramsOf(tool).properties ?? {});
  const required = paramsOf(tool).required ?? [];
  if (required.length === 1) return required[0] ?? null;
  if (required.length === 0 && props.length === 1) return props[0] ?? null;
  return null;
}

function buildArguments(tool: Tool, rest: string, heredocBody: string | undefined): ParseResult {
  const props = paramsOf(tool).properties ?? {};
  if (rest.startsWith('{') && heredocBody === undefined) {
    const parsed = parseJson(rest, 'tool_call');
    if (!parsed.ok) return parsed;
    if (!isPlainObject(parsed.action)) return { ok: false, error: `arguments for ${tool.name} must be a JSON object` };
    return parsed;
  }
  const args: Record<string, unknown> = {};
  const single = wholeLineParam(tool);
  if (single !== null && heredocBody === undefined && rest !== '' && !allNamed(rest, props)) {
    // Optional parameters may still be given as key=value at either end: `bash timeout_s=5 sleep 9`.
    const { named, middle } = peelNamed(rest, props, single);
    for (const [key, raw] of named) {
      const v = coerce(raw, props[key], key, tool);
      if (!v.ok) return v;
      args[key] = v.action;
    }
    const v = coerce(middle, props[single], single, tool);
    if (!v.ok) return v;
    args[single] = v.action;
    return { ok: true, action: inSchemaOrder(args, props) };
  }
  const words = tokenize(rest);
  if (!words.ok) return words;
  const positional: string[] = [];
  for (const word of words.action as string[]) {
    const kv = KV_RE.exec(word);
    if (kv && kv[1] !== undefined && kv[1] in props) {
      const v = coerce(kv[2] ?? '', props[kv[1]], kv[1], tool);
      if (!v.ok) return v;
      args[kv[1]] = v.action;
    } else {
      positional.push(word);
    }
  }
  if (heredocBody !== undefined) positional.push(heredocBody);
  const slots = positionalOrder(tool).filter((p) => !(p in args));
  if (positional.length > slots.length) {
    return { ok: false, error: `too many arguments for ${tool.name}; usage: ${toolUsage(tool)} (or key=value, or a JSON object)` };
  }
  for (const [i, value] of positional.entries()) {
    const key = slots[i] as string;
    const v = coerce(value, props[key], key, tool);
    if (!v.ok) return v;
    args[key] = v.action;
  }
  const missing = (paramsOf(tool).required ?? []).filter((r) => !(r in args));
  if (missing.length > 0) {
    return { ok: false, error: `missing ${missing.map((r) => `'${r}'`).join(', ')} for ${tool.name}; usage: ${toolUsage(tool)}` };
  }
  return { ok: true, action: inSchemaOrder(args, props) };
}

/** Arguments in the order the tool declares its parameters, whatever order they were typed in. */
function inSchemaOrder(args: Record<string, unknown>, props: Record<string, JsonSchema>): Record<string, unknown> {
  const keys = [...Object.keys(props).filter((k) => k in args), ...Object.keys(args).filter((k) => !(k in props))];
  return Object.fromEntries(keys.map((k) => [k, args[k]]));
}

const KV_RE = /^([A-Za-z_][A-Za-z0-9_]*)=([\s\S]*)$/;

/** True when every word is key=value for a known parameter (then no word is "the rest of the line"). */
function allNamed(rest: string, props: Record<string, JsonSchema>): boolean {
  const words = tokenize(rest);
  if (!words.ok) return false;
  return (words.action as string[]).every((w) => {
    const kv = KV_RE.exec(w);
    return kv !== null && kv[1] !== undefined && kv[1] in props;
  });
}

/** Splits unquoted key=value words for known optional parameters off both ends of the line. */
function peelNamed(rest: string, props: Record<string, JsonSchema>, single: string): { named: [string, string][]; middle: string } {
  const named: [string, string][] = [];
  const known = (k: string | undefined): k is string => k !== undefined && k !== single && k in props;
  let middle = rest;
  for (;;) {
    const m = /^([A-Za-z_][A-Za-z0-9_]*)=(\S*)\s+(?=\S)/.exec(middle);
    if (!m || !known(m[1])) break;
    named.push([m[1], m[2] ?? '']);
    middle = middle.slice(m[0].length);
  }
  for (;;) {
    const m = /(?<=\S)\s+([A-Za-z_][A-Za-z0-9_]*)=(\S*)$/.exec(middle);
    if (!m || !known(m[1])) break;
    named.push([m[1], m[2] ?? '']);
    middle = middle.slice(0, m.index);
  }
  return { named, middle };
}

function schemaTypes(schema: JsonSchema | undefined): string[] {
  if (!schema) return [];
  if (Array.isArray(schema.type)) return schema.type.filter((t): t is string => typeof t === 'string');
  return typeof schema.type === 'string' ? [schema.type] : [];
}

/** Converts a typed word to the parameter's JSON type; the server still validates the result. */
function coerce(raw: string, schema: JsonSchema | undefined, key: string, tool: Tool): ParseResult {
  const types = schemaTypes(schema);
  if (Array.isArray(schema?.enum) && schema.enum.includes(raw)) return { ok: true, action: raw };
  if (types.includes('string') || (types.length === 0 && !schema?.enum)) return { ok: true, action: raw };
  const t = raw.trim();
  if (types.includes('integer') || types.includes('number')) {
    const n = Number(t);
    if (t !== '' && Number.isFinite(n)) {
      if (types.includes('integer') && !types.includes('number') && !Number.isInteger(n)) {
        return { ok: false, error: `${tool.name}.${key} must be an integer, got '${raw}'` };
      }
      return { ok: true, action: n };
    }
  }
  if (types.includes('boolean')) {
    if (t === 'true' || t === 'false') return { ok: true, action: t === 'true' };
  }
  try {
    return { ok: true, action: JSON.parse(t) };
  } catch {
    return { ok: false, error: `${tool.name}.${key} expects ${types.join(' | ') || 'a JSON value'}, got '${raw}'` };
  }
}

/** Shell-like word splitting: whitespace separates, '...' is literal, "..." and bare words honour backslash escapes. */
export function tokenize(text: string): ParseResult {
  const words: string[] = [];
  let cur = '';
  let inWord = false;
  let i = 0;
  while (i < text.length) {
    const c = text[i] as string;
    if (/\s/.test(c)) {
      if (inWord) words.push(cur);
      cur = '';
      inWord = false;
      i++;
      continue;
    }
    inWord = true;
    if (c === "'") {
      const end = text.indexOf("'", i + 1);
      if (end < 0) return { ok: false, error: 'unterminated single quote' };
      cur += text.slice(i + 1, end);
      i = end + 1;
    } else if (c === '"') {
      i++;
      while (i < text.length && text[i] !== '"') {
        if (text[i] === '\\' && i + 1 < text.length) i++;
        cur += text[i];
        i++;
      }
      if (i >= text.length) return { ok: false, error: 'unterminated double quote' };
      i++;
    } else if (c === '\\' && i + 1 < text.length) {
      cur += text[i + 1];
      i += 2;
    } else {
      cur += c;
      i++;
    }
  }
  if (inWord) words.push(cur);
  return { ok: true, action: words };
}
