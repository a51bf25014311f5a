// Shell text builders for the command channel. Everything a command carries (argv, env, cwd) is
// quoted here on the host, so the in-sandbox agent never parses user data.
import { SandboxRequestError } from '../errors.js';

/** POSIX single-quote quoting: safe for any string without NUL. */
export function shellQuote(s: string): string {
  if (s.includes('\0')) throw new SandboxRequestError('NUL byte in a command argument');
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/**
 * Encodes bytes as a printf(1) format that reproduces them exactly, usable inside single quotes:
 * printable ASCII stays literal (cheap to read byte by byte), `%` doubles, everything else (quote,
 * backslash, newline, UTF-8, a leading dash) becomes a 3-digit octal escape. POSIX printf, dash and busybox all
 * accept `\ooo` in the format.
 */
export function escapeForPrintf(buf: Buffer): string {
  let out = '';
  let first = true;
  for (const b of buf) {
    // A leading '-' would be taken for an option of printf: escape it too.
    const dash = first && b === 0x2d;
    first = false;
    if (b === 0x25) out += '%%';
    else if (dash) out += '\\055';
    else if (b >= 0x20 && b < 0x7f && b !== 0x27 && b !== 0x5c) out += String.fromCharCode(b);
    else out += `\\${b.toString(8).padStart(3, '0')}`;
  }
  return out;
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export interface ScriptParts {
  argv?: string[];
  script?: string;
  cwd: string;
  env?: Record<string, string>;
}

/** The script the agent runs for one exec: chdir, exports, then the user's script or `exec argv`. */
export function buildCommandScript(p: ScriptParts): Buffer {
  const lines: string[] = [`cd ${shellQuote(p.cwd)} || exit 126`];
  for (const [k, v] of Object.entries(p.env ?? {})) {
    if (!ENV_NAME.test(k)) throw new SandboxRequestError(`invalid environment variable name: ${JSON.stringify(k)}`);
    lines.push(`export ${k}=${shellQuote(v)}`);
  }
  if (p.argv && p.argv.length > 0) {
    lines.push(`exec ${p.argv.map(shellQuote).join(' ')}`);
  } else if (p.script !== undefined) {
    if (p.script.includes('\0')) throw new SandboxRequestError('NUL byte in script');
    lines.push(p.script);
  } else {
    throw new SandboxRequestError('exec needs argv (non-empty) or script');
  }
  return Buffer.from(`${lines.join('\n')}\n`, 'utf8');
}

export interface FastArgv {
  argv: string[];
  cwd: string;
  env: Record<string, string>;
}

/**
 * The one-line form of an argv command (runner function `jx`; the caller guarantees that `cwd` is the
 * workspace root, the one directory the judge may enter on the agent's behalf, forwarded to the agent's job runner by
 * the `f` call), or null when it does not fit on one line: the channel is line-based, so no value
 * may contain a newline; argv[0] must not look like an option of setsid; lines stay short because
 * the agent reads them a byte at a time (and FIFO writes up to 4 KiB are atomic).
 */
export function fastArgvLine(id: number, cap1: number, flags: string, p: FastArgv): string | null {
  const first = p.argv[0];
  if (first === undefined || first.startsWith('-')) return null;
  const values = [p.cwd, ...p.argv, ...Object.values(p.env)];
  if (values.some((v) => v.includes('\n') || v.includes('\0'))) return null;
  let exports = '';
  for (const [k, v] of Object.entries(p.env)) {
    if (!ENV_NAME.test(k)) throw new SandboxRequestError(`invalid environment variable name: ${JSON.stringify(k)}`);
    exports += `export ${k}=${shellQuote(v)}; `;
  }
  const line = `f jx ${id} ${cap1} ${flags} ${shellQuote(p.cwd)} ${shellQuote(exports)} ${p.argv.map(shellQuote).join(' ')}\n`;
  return line.length <= 3900 ? line : null;
}

/**
 * Words a POSIX shell (and bash) would resolve to something other than a program on PATH, or parse
 * before any lookup: reserved words, special and regular builtins of bash, dash and busybox ash. A
 * command whose first word is one of these always goes through the shell.
 */
const SHELL_WORDS = new Set(
  (
    '! . : [ [[ ]] { } alias bg bind break builtin caller case cd chdir command compgen complete compopt continue coproc ' +
    'declare dirs disown do done echo elif else enable esac eval exec exit export false fc fg fi for function getopts ' +
    'hash help history if in jobs kill let local logout mapfile popd printf pushd pwd read readarray readonly return ' +
    'select set shift shopt source suspend test then time times trap true type typeset ulimit umask unalias unset ' +
    'until wait while'
  ).split(' '),
);

/** Characters no shell gives a meaning inside a word: no quoting, expansion, glob, redirection, comment or operator. */
const PLAIN_WORD = /^[A-Za-z0-9_./,:@%+=-]+$/;

/**
 * The argv a shell would exec for `script`, or null when the shell has anything to do. A one-line
 * command of plain words whose first word names a program (not a builtin, keyword or assignment) is what
 * `sh -c` turns into exactly one execve of that program along PATH, with those words as its argv; running
 * it that way skips one exec of the shell itself, which is half the cost of such a command where process
 * start-up dominates (docs/SANDBOX.md, *The command channel*). Anything else (quotes, `$`, globs, `~`,
 * pipes, redirections, `;`, `&`, newlines, a leading `-`) is left to the shell. Observable differences,
 * documented: the environment lacks what the shell itself adds (`PWD`, `SHLVL`, bash's `_`), and a missing
 * program is reported as `sandgym: NAME: not found` (exit 127, as the shell's).
 */
export function simpleCommandArgv(script: string): string[] | null {
  if (script.length > 4096) return null;
  const words = script.split(/[ \t]+/);
  if (words[0] === '') words.shift();
  if (words.length > 0 && words[words.length - 1] === '') words.pop();
  const first = words[0];
  if (first === undefined || first.startsWith('-') || first.includes('=') || SHELL_WORDS.has(first)) return null;
  for (const w of words) if (!PLAIN_WORD.test(w)) return null;
  return words;
}
