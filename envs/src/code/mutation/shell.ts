// Shell mutants. No maintained mutation tool covers shell scripts, so this is our own small
// token mutator over bash source (docs/TASKS.md lists its operators): relational and logical
// operators, test flags, negation, arithmetic inside (( )), integer constants +-1 and deleted
// commands. Only code is mutated: never text inside quotes or comments.
import type { RawMutant } from './mutants.js';

export const SHELL_MUTATOR_VERSION = '1';

const RELATIONAL: Record<string, string[]> = {
  '-lt': ['-le', '-ge'],
  '-le': ['-lt', '-gt'],
  '-gt': ['-ge', '-le'],
  '-ge': ['-gt', '-lt'],
  '-eq': ['-ne'],
  '-ne': ['-eq'],
};
const TEST_FLAGS: Record<string, string[]> = { '-z': ['-n'], '-n': ['-z'], '-d': ['-f'], '-f': ['-d'] };
const ARITH: Record<string, string[]> = {
  '+': ['-'],
  '-': ['+'],
  '*': ['/'],
  '/': ['*'],
  '%': ['*'],
  '<': ['<='],
  '<=': ['<'],
  '>': ['>='],
  '>=': ['>'],
  '==': ['!='],
  '!=': ['=='],
  '++': ['--'],
  '--': ['++'],
};
/** Lines that open or close a construct: deleting them breaks the syntax, not the behaviour. */
const STRUCTURAL =
  /^(if|then|else|elif|fi|for|while|until|do|done|case|esac|function|select|in|set|return\s*$|\{|\}|\(|\)|;;|[A-Za-z_][A-Za-z0-9_]*\s*\(\)\s*\{?)(\s|;|$)/;

/** Marks which characters of a line are code (not inside quotes, not a comment). */
function codeMask(line: string): boolean[] {
  const mask = new Array<boolean>(line.length).fill(false);
  let quote: "'" | '"' | null = null;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (quote) {
      if (c === '\\' && quote === '"') i++;
      else if (c === quote) quote = null;
      continue;
    }
    if (c === '\\') {
      i++;
      continue;
    }
    if (c === "'" || c === '"') {
      quote = c;
      continue;
    }
    if (c === '#' && (i === 0 || /\s/.test(line[i - 1] ?? ''))) break;
    mask[i] = true;
  }
  return mask;
}

/** [start, end) spans of arithmetic ($(( )) and (( ))) in code. */
function arithmeticSpans(line: string, mask: boolean[]): [number, number][] {
  const spans: [number, number][] = [];
  for (let i = 0; i < line.length - 1; i++) {
    if (!mask[i] || line[i] !== '(' || line[i + 1] !== '(') continue;
    let depth = 0;
    for (let j = i; j < line.length; j++) {
      if (line[j] === '(') depth++;
      else if (line[j] === ')') depth--;
      if (depth === 0) {
        spans.push([i + 2, j - 1]);
        i = j;
        break;
      }
    }
  }
  return spans;
}

/** Whether position i is inside a test: after an unclosed `[`/`[[` or a `test` command on the line. */
function inTest(line: string, mask: boolean[], i: number): boolean {
  let open = 0;
  for (const m of line.slice(0, i).matchAll(/(?<=^|[\s;!(])(\[\[?|test)(?=\s)|(?<=\s)\]\]?(?=\s|;|$)/g)) {
    if (!mask[m.index ?? 0]) continue;
    open += m[0].startsWith(']') ? -1 : 1;
  }
  return open > 0;
}

export function shellMutants(files: { path: string; source: string }[]): { version: string; mutants: RawMutant[] } {
  const out: RawMutant[] = [];
  for (const f of files) {
    const lines = f.source.split('\n');
    const emit = (li: number, start: number, end: number, replacement: string, operator: string) => {
      const l = lines[li] ?? '';
      const copy = [...lines];
      copy[li] = l.slice(0, start) + replacement + l.slice(end);
      out.push({ path: f.path, operator, source: copy.join('\n') });
    };
    let continued = false;
    lines.forEach((line, li) => {
      const wasContinued = continued;
      continued = /\\$/.test(line);
      if (li === 0 && line.startsWith('#!')) return;
      const mask = codeMask(line);
      const code = (i: number, n: number) => mask.slice(i, i + n).every(Boolean) && n > 0;
      const arith = arithmeticSpans(line, mask);
      const inArith = (i: number) => arith.some(([a, b]) => i >= a && i < b);
      // Word-shaped operators, inside a test only ([ ], [[ ]], `test`): elsewhere `-d` or `-f` is an option.
      for (const m of line.matchAll(/(?<=^|\s)(-[a-z]{1,2})(?=\s)/g)) {
        const i = m.index ?? 0;
        const tok = m[1] as string;
        if (!code(i, tok.length) || !inTest(line, mask, i)) continue;
        for (const r of RELATIONAL[tok] ?? []) emit(li, i, i + tok.length, r, `relational ${tok} -> ${r}`);
        for (const r of TEST_FLAGS[tok] ?? []) emit(li, i, i + tok.length, r, `test flag ${tok} -> ${r}`);
      }
      for (const m of line.matchAll(/&&|\|\|/g)) {
        const i = m.index ?? 0;
        if (code(i, 2) && !inArith(i)) emit(li, i, i + 2, m[0] === '&&' ? '||' : '&&', `logical ${m[0]}`);
      }
      for (const m of line.matchAll(/(?<=^|\s)!\s/g)) {
        const i = m.index ?? 0;
        if (code(i, 1)) emit(li, i, i + 2, '', 'negation removed');
      }
      for (const [a, b] of arith) {
        for (const m of line.slice(a, b).matchAll(/\+\+|--|<=|>=|==|!=|[-+*/%<>]/g)) {
          const i = a + (m.index ?? 0);
          const tok = m[0];
          if (!code(i, tok.length)) continue;
          for (const r of ARITH[tok] ?? []) emit(li, i, i + tok.length, r, `arithmetic ${tok} -> ${r}`);
        }
      }
      // Integers that are words of their own: not fds (2>, >&2), not inside names, globs or ranges ([0-9]).
      for (const m of line.matchAll(/(?<![\w&<>$#[.-])\d+(?![\w<>\].-])/g)) {
        const i = m.index ?? 0;
        if (!code(i, m[0].length)) continue;
        const v = Number(m[0]);
        emit(li, i, i + m[0].length, String(v + 1), `constant ${v} -> ${v + 1}`);
        if (v > 0) emit(li, i, i + m[0].length, String(v - 1), `constant ${v} -> ${v - 1}`);
      }
      // Deleted command: one whole simple command line becomes the no-op `:`.
      const body = line.trim();
      if (body && !body.startsWith('#') && !wasContinued && !continued && !STRUCTURAL.test(body) && mask[line.indexOf(body)]) {
        const indent = line.length - line.trimStart().length;
        emit(li, indent, line.length, ':', 'command deleted');
      }
    });
  }
  // One mutant per distinct program.
  const seen = new Set<string>();
  return { version: SHELL_MUTATOR_VERSION, mutants: out.filter((m) => (seen.has(m.source) ? false : (seen.add(m.source), true))) };
}
