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
