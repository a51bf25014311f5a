// The workspace capture: the ONE view of an agent's workspace that everything deciding a reward uses (code-v0's
// tests and final_state checks, `sandgym rescore`, `tasks validate`; later the repository and Harbor task kinds and
// snapshots). docs/TASKS.md, "What the judge grades: the workspace capture", states the rule; in short:
//
// - The workspace is read in the agent's sandbox AS THE AGENT UID (`captureWorkspace`: one POSIX-sh script, with
//   GNU or busybox find/tar/head): the judge never opens an agent-made path with its own privileges. The archive
//   it produces is untrusted data, parsed in memory by `parseCapture` (no disk, no path is ever followed).
// - What exists is carried as what it is: regular files with their exact bytes and modes (executable bits
//   included), every name of a hard link (recorded as a link), symlinks as symlinks (target recorded, never
//   followed), empty directories, dependency folders (node_modules/, .git/, __pycache__/, .venv/ ...). Nothing is
//   dropped, and no per-file cap omits content: a file is carried whole up to the whole-workspace cap.
// - What cannot be carried exactly fails CLOSED with `CaptureRefused`, whose message is the `zero_reason` (it names
//   the path and the rule): special files (FIFOs, sockets, devices), files or a workspace over MAX_WORKSPACE_BYTES,
//   more than MAX_ENTRIES entries, names with control characters or over MAX_PATH_BYTES, anything the agent's uid
//   cannot read (chmod 000), a capture that fails or does not finish. The agent made the workspace, so each is the
//   agent's: a score of 0, never a retryable error. Only positive evidence of an infrastructure fault (the sandbox
//   died, the image lacks find/tar) is a SandboxFailure.
// - The in-sandbox script checks the cheap things first from metadata (find -size, -type, -perm): a 10 GB sparse
//   file is refused without reading a byte, and the archive is cut by `head -c` one byte past its cap (tar dies of
//   SIGPIPE), so no workspace makes the sandbox or the server stream more than the cap.
import { extract, pack } from 'tar-stream';
import { SandboxFailure } from '../api.js';
import type { Sandbox } from '../sandbox-api.js';
import { sha256Hex } from '../code/task-hash.js';

/** Whole-workspace cap: the bytes of all regular files (each hard-linked file once); also the largest single file. */
export const MAX_WORKSPACE_BYTES = 64 * 1024 * 1024;
/** Entries (files, directories, symlinks, every name of a hard link). */
export const MAX_ENTRIES = 20_000;
/** Longest workspace-relative path, and longest symlink target, in UTF-8 bytes (Linux PATH_MAX). */
export const MAX_PATH_BYTES = 4096;
/** How long the in-sandbox capture may take; beyond it the capture fails closed. */
export const CAPTURE_TIMEOUT_MS = 20_000;

export interface CaptureLimits {
  maxBytes?: number;
  maxEntries?: number;
}

/** One entry of a capture. Paths are POSIX, relative to the workspace root, without "./"; never "" or "..". */
export type CapturedEntry =
  | { path: string; type: 'directory'; mode: number }
  | {
      path: string;
      type: 'file';
      /** Permission bits (& 0o7777) as the agent left them. */
      mode: number;
      content: Uint8Array;
      /**
       * Set on every name of a hard-linked file (the first one included): the group's first name in archive order.
       * All names share the same content (and one inode, in the workspace and in the grading sandbox).
       */
      link_of?: string;
    }
  | { path: string; type: 'symlink'; mode: number /** As stored in the link, never resolved. */; target: string };

/** The agent's workspace as the judge grades it. `entries` sorted by path (code-unit order). */
export interface WorkspaceCapture {
  entries: CapturedEntry[];
  /** Bytes of regular-file content (each hard-linked file once). */
  bytes: number;
}

/**
 * The workspace cannot be graded as it exists, for a reason the agent caused: the grade is 0 and `message` is the
 * zero_reason. `path` is the offending workspace path (null for workspace-wide rules), `rule` a stable tag.
 */
export class CaptureRefused extends Error {
  override name = 'CaptureRefused';
  constructor(
    readonly rule: CaptureRule,
    readonly path: string | null,
    message: string,
  ) {
    super(message);
  }
}

export type CaptureRule =
  | 'special_file'
  | 'too_large'
  | 'too_many_entries'
  | 'unreadable'
  | 'bad_name'
  | 'path_too_long'
  | 'capture_failed'
  | 'capture_timeout'
  /** The archive holds something no plain tree has (traversal, duplicates, a link out, an entry under a symlink). */
  | 'bad_archive'
  /** The bytes are not a (complete) tar archive at all. */
  | 'unreadable_archive';

/** What `captureWorkspace` returns: the parsed capture and the raw archive (the `final_workspace` artifact). */
export interface CapturedWorkspace {
  capture: WorkspaceCapture;
  archive: Uint8Array;
}

const MIB = 1024 * 1024;
const mib = (n: number) => (n % MIB === 0 ? `${n / MIB} MiB` : `${n} bytes`);

/** A path as it appears in a reason: bare when plain, JSON-quoted when it holds anything odd. */
export function showPath(p: string): string {
  return /^[\w./@+,=~-]+$/.test(p) ? p : JSON.stringify(p);
}

/** The archive the in-sandbox tar may produce for a workspace within the caps: content, headers, long names. */
export function archiveCap(limits: CaptureLimits = {}): number {
  return (limits.maxBytes ?? MAX_WORKSPACE_BYTES) + (limits.maxEntries ?? MAX_ENTRIES) * 1536 + MIB;
}

/**
 * The capture, run as the agent uid in the agent's sandbox: $1 workspace root, $2 max file bytes, $3 archive cap + 1.
 * Two walks and one pipe: `find` looks for what cannot be carried from metadata alone (a huge sparse file costs
 * nothing; the first hit is reported as the last stderr line `sandgym-capture: <kind> <path>`, status 3), then tar's
 * output is cut one byte past the cap (tar then dies of SIGPIPE) and tar's status follows on stderr
 * (`sandgym-capture: tar <status>`). Tools missing (an image fault): status 5. The entry cap is the parser's (an
 * archive of hundreds of thousands of entries meets the archive cap first). About 5 process starts in all: a
 * capture runs on every graded step.
 */
export const CAPTURE_SCRIPT = String.raw`
for t in find tar head; do command -v "$t" >/dev/null 2>&1 || { echo "sandgym-capture: tools $t" >&2; exit 5; }; done
cd -- "$1" 2>/dev/null || { echo "sandgym-capture: unreadable ." >&2; exit 3; }
r() { printf 'sandgym-capture: %s %s
' "$1" "$2" >&2; exit 3; }
# Every entry that cannot be carried (usually none); the first one is reported.
x=$(find . -mindepth 1 \( -type s -o -type p -o -type b -o -type c -o -type f -size +"$2"c -o ! -type l ! -perm -u+r -o -type d ! -perm -u+x \) -print 2>/dev/null)
if [ -n "$x" ]; then
  x=${'$'}{x%%"
"*}
  if [ ! -e "$x" ] && [ ! -L "$x" ]; then r name "$x"
  elif [ -S "$x" ]; then r socket "$x"
  elif [ -p "$x" ]; then r fifo "$x"
  elif [ -b "$x" ] || [ -c "$x" ]; then r device "$x"
  elif [ -n "$(find "$x" -prune -type f -size +"$2"c -perm -u+r 2>/dev/null)" ]; then r big "$x"
  else r unreadable "$x"; fi
fi
# tar's own status goes to stderr; head ends the stream one byte past the cap (tar then dies of SIGPIPE).
{ tar -cf - .; echo "sandgym-capture: tar $?" >&2; } | head -c "$3"
`;

const REFUSAL = /^sandgym-capture: (\S+) ?(.*)$/;

function relOf(found: string): string {
  return found.replace(/^\.\//, '');
}

/** Runs the capture in `sb` as the agent and parses it. Throws CaptureRefused (the agent's) or SandboxFailure (infrastructure). */
export async function captureWorkspace(sb: Sandbox, root: string, limits: CaptureLimits = {}): Promise<CapturedWorkspace> {
  const maxBytes = limits.maxBytes ?? MAX_WORKSPACE_BYTES;
  const cap = archiveCap(limits);
  const r = await sb.execBinary({
    argv: ['sh', '-c', CAPTURE_SCRIPT, 'sandgym-capture', root, String(maxBytes), String(cap + 1)],
    timeout_ms: CAPTURE_TIMEOUT_MS,
    max_output_bytes: cap + 1,
  });
  if (r.timed_out)
    throw new CaptureRefused(
      'capture_timeout',
      null,
      `workspace capture did not finish within ${CAPTURE_TIMEOUT_MS / 1000} s (the agent's workspace is read as the agent)`,
    );
  const lines = r.stderr.split('\n').filter((l) => l !== '');
  const marker = [...lines].reverse().find((l) => REFUSAL.test(l));
  const m = marker ? REFUSAL.exec(marker) : null;
  const kind = m?.[1];
  const arg = m?.[2] ?? '';
  if (r.exit_code === 5 && kind === 'tools') throw new SandboxFailure(`workspace capture: the sandbox image has no working ${arg}`);
  if (r.exit_code === 3 && kind) throw refusalOf(kind, relOf(arg), maxBytes);
  if (r.stdout.byteLength > cap)
    throw new CaptureRefused('too_large', null, `workspace is larger than the ${mib(maxBytes)} workspace cap (its archive passed ${mib(cap)})`);
  // GNU tar skips sockets with a warning and status 0: one made after the check is still refused.
  const sock = lines.find((l) => /: socket ignored$/.test(l));
  if (sock) {
    const p = relOf(sock.replace(/^tar: /, '').replace(/: socket ignored$/, ''));
    throw new CaptureRefused('special_file', p, `workspace path ${showPath(p)} is a unix socket: special files cannot be graded`);
  }
  if (r.exit_code !== 0 || kind !== 'tar' || arg !== '0') {
    if (kind === 'tar' && (arg === '126' || arg === '127')) throw new SandboxFailure(`workspace capture: tar could not run (status ${arg})`);
    const why =
      lines
        .filter((l) => !REFUSAL.test(l))
        .slice(0, 3)
        .join('; ')
        .slice(0, 400) || `status ${kind === 'tar' ? arg : String(r.exit_code ?? r.signal)}`;
    throw new CaptureRefused('capture_failed', null, `workspace capture failed (tar, run as the agent): ${why}`);
  }
  const capture = await parseCapture(r.stdout, limits);
  return { capture, archive: r.stdout };
}

function refusalOf(kind: string, p: string, maxBytes: number): CaptureRefused {
  const sp = showPath(p);
  switch (kind) {
    case 'socket':
      return new CaptureRefused('special_file', p, `workspace path ${sp} is a unix socket: special files cannot be graded`);
    case 'fifo':
      return new CaptureRefused('special_file', p, `workspace path ${sp} is a FIFO: special files cannot be graded`);
    case 'device':
      return new CaptureRefused('special_file', p, `workspace path ${sp} is a device: special files cannot be graded`);
    case 'big':
      return new CaptureRefused('too_large', p, `workspace file ${sp} is larger than the ${mib(maxBytes)} workspace cap`);
    case 'name':
      return new CaptureRefused('bad_name', p, `workspace path ${sp} has a control character in its name: such names cannot be graded`);
    default:
      return p === '' || p === '.'
        ? new CaptureRefused('unreadable', null, 'workspace root is unreadable by the agent: the judge grades only what the agent can read')
        : new CaptureRefused(
            'unreadable',
            p,
            `workspace path ${sp} is unreadable by the agent (its mode denies the owner): the judge grades only what the agent can read`,
          );
  }
}

const CONTROL = /[\u0000-\u001f\u007f]/;
const utf8Strict = new TextDecoder('utf-8', { fatal: true });

function decodeName(raw: string): string {
  // tar-stream gives names decoded as latin1 (one char per byte): decode the bytes as strict UTF-8 here.
  const bytes = Buffer.from(raw, 'latin1');
  try {
    return utf8Strict.decode(bytes);
  } catch {
    throw new CaptureRefused(
      'bad_name',
      null,
      `workspace has a name that is not valid UTF-8 (${JSON.stringify(raw.slice(0, 80))}): such names cannot be graded`,
    );
  }
}

function checkedPath(name: string): string {
  let p = name;
  while (p.startsWith('./')) p = p.slice(2);
  p = p.replace(/\/+$/, '');
  if (p === '.' || p === '') return '';
  if (CONTROL.test(p))
    throw new CaptureRefused('bad_name', p, `workspace path ${showPath(p)} has a control character in its name: such names cannot be graded`);
  if (Buffer.byteLength(p) > MAX_PATH_BYTES)
    throw new CaptureRefused('path_too_long', p.slice(0, 200), `workspace path ${showPath(`${p.slice(0, 120)}...`)} is longer than ${MAX_PATH_BYTES} bytes`);
  if (p.startsWith('/') || p.split('/').some((s) => s === '' || s === '.' || s === '..')) {
    throw new CaptureRefused('bad_archive', p, `workspace archive entry ${showPath(p)} is not a plain relative path`);
  }
  return p;
}

/**
 * Parses a workspace archive (untrusted: whatever the agent's uid produced) into a capture, in memory. Refuses, with
 * CaptureRefused: special files, anything over the caps, traversal or absolute names, duplicate names, hard links
 * to anything but an earlier regular file of the archive, entries under a non-directory, malformed archives.
 */
export async function parseCapture(tar: Uint8Array, limits: CaptureLimits = {}): Promise<WorkspaceCapture> {
  const maxBytes = limits.maxBytes ?? MAX_WORKSPACE_BYTES;
  const maxEntries = limits.maxEntries ?? MAX_ENTRIES;
  const cap = archiveCap(limits);
  if (tar.byteLength > cap)
    throw new CaptureRefused('too_large', null, `workspace is larger than the ${mib(maxBytes)} workspace cap (its archive passed ${mib(cap)})`);
  const byPath = new Map<string, CapturedEntry>();
  /** Every proper prefix of a path seen so far: directories the archive implies. */
  const parents = new Set<string>();
  let bytes = 0;
  // filenameEncoding is a real option of tar-stream's extract (extract.js) that its bundled types do not list.
  const ex = extract({ filenameEncoding: 'latin1' } as Parameters<typeof extract>[0]);
  let failure: Error | null = null;
  let deferred: CaptureRefused | null = null;
  const done = new Promise<void>((resolve, reject) => {
    const fail = (err: Error) => {
      if (failure) return;
      failure = err;
      reject(err);
      ex.destroy();
    };
    const unreadable = (e: Error) =>
      fail(e instanceof CaptureRefused ? e : new CaptureRefused('unreadable_archive', null, `workspace archive unreadable: ${e.message}`));
    ex.on('entry', (header, stream, next) => {
      if (failure) return;
      /** Reads this entry's data without keeping it (a truncated archive errors here). */
      const skip = () => {
        stream.on('error', unreadable);
        stream.on('end', () => next());
        stream.resume();
      };
      if (deferred) {
        // Already refused: read on without keeping anything, so an archive that is also cut short says so.
        skip();
        return;
      }
      try {
        const pax = (header.pax ?? null) as { path?: string; linkpath?: string } | null;
        // Pax names and targets arrive as real strings already; ustar / GNU long names as latin1 bytes.
        const path = checkedPath(pax?.path !== undefined ? header.name : decodeName(header.name));
        const mode = (header.mode ?? 0) & 0o7777;
        const size = header.size ?? 0;
        if (!Number.isSafeInteger(size) || size < 0)
          throw new CaptureRefused('bad_archive', path, `workspace archive entry ${showPath(path)} has an invalid size`);
        const type = header.type;
        if (path === '') {
          if (type !== 'directory') throw new CaptureRefused('bad_archive', null, 'workspace archive root is not a directory');
          skip();
          return;
        }
        if (byPath.has(path)) throw new CaptureRefused('bad_archive', path, `workspace archive names ${showPath(path)} twice`);
        if (byPath.size + 1 > maxEntries)
          throw new CaptureRefused('too_many_entries', null, `workspace has more than ${maxEntries} entries (the workspace entry cap)`);
        // Every ancestor must be a directory of the capture (or not listed: tar lists parents first, but a hostile
        // archive may not): never a file or a symlink, so nothing is ever written through a link.
        const segs = path.split('/');
        for (let i = 1; i < segs.length; i++) {
          const anc = byPath.get(segs.slice(0, i).join('/'));
          if (anc && anc.type !== 'directory')
            throw new CaptureRefused(
              'bad_archive',
              path,
              `workspace archive entry ${showPath(path)} lies under ${showPath(anc.path)}, which is not a directory`,
            );
        }
        // The same, in the other order: no non-directory where earlier entries implied a directory.
        if (type !== 'directory' && parents.has(path))
          throw new CaptureRefused('bad_archive', path, `workspace archive entry ${showPath(path)} is not a directory, but entries lie under it`);
        for (let i = 1; i < segs.length; i++) parents.add(segs.slice(0, i).join('/'));
        let entry: CapturedEntry;
        switch (type) {
          case 'directory':
            entry = { path, type: 'directory', mode };
            break;
          case 'symlink': {
            const target = pax?.linkpath !== undefined ? (header.linkname ?? '') : decodeName(header.linkname ?? '');
            if (target === '' || target.includes('\0') || Buffer.byteLength(target) > MAX_PATH_BYTES) {
              throw new CaptureRefused('bad_archive', path, `workspace symlink ${showPath(path)} has an empty or over-long target`);
            }
            entry = { path, type: 'symlink', mode, target };
            break;
          }
          case 'link': {
            const raw = pax?.linkpath !== undefined ? (header.linkname ?? '') : decodeName(header.linkname ?? '');
            let to: string;
            try {
              to = checkedPath(raw);
            } catch {
              to = '';
            }
            const first = to === '' ? undefined : byPath.get(to);
            if (!first || first.type !== 'file') {
              throw new CaptureRefused(
                'bad_archive',
                path,
                `workspace hard link ${showPath(path)} points to ${showPath(raw)}, which is not an earlier file of the archive`,
              );
            }
            entry = { path, type: 'file', mode: first.mode, content: first.content, link_of: first.link_of ?? first.path };
            break;
          }
          case 'file':
          case 'contiguous-file': {
            if (size > maxBytes)
              throw new CaptureRefused('too_large', path, `workspace file ${showPath(path)} is larger than the ${mib(maxBytes)} workspace cap`);
            bytes += size;
            if (bytes > maxBytes) throw new CaptureRefused('too_large', null, `workspace is larger than the ${mib(maxBytes)} workspace cap`);
            const chunks: Buffer[] = [];
            stream.on('data', (c: unknown) => chunks.push(c as Buffer));
            stream.on('error', unreadable);
            stream.on('end', () => {
              if (failure) return;
              byPath.set(path, { path, type: 'file', mode, content: new Uint8Array(Buffer.concat(chunks)) });
              next();
            });
            return;
          }
          case 'fifo':
            throw new CaptureRefused('special_file', path, `workspace path ${showPath(path)} is a FIFO: special files cannot be graded`);
          case 'character-device':
          case 'block-device':
            throw new CaptureRefused('special_file', path, `workspace path ${showPath(path)} is a device: special files cannot be graded`);
          default:
            throw new CaptureRefused('special_file', path, `workspace path ${showPath(path)} has an archive type (${String(type)}) that cannot be graded`);
        }
        byPath.set(path, entry);
        skip();
      } catch (e) {
        // Caps stop the parse at once (memory and time); what an entry is (a FIFO, a traversal, a bad name) is
        // reported once the whole archive has been read, so a truncated archive is `unreadable_archive` first.
        if (e instanceof CaptureRefused && e.rule !== 'too_large' && e.rule !== 'too_many_entries') {
          deferred = e;
          skip();
        } else fail(e as Error);
      }
    });
    ex.on('finish', () => (deferred ? fail(deferred) : resolve()));
    ex.on('error', unreadable);
  });
  ex.end(Buffer.from(tar.buffer, tar.byteOffset, tar.byteLength));
  await done;
  // Every name of a hard-linked file says so, the first one too (link_of: the group's first name).
  for (const e of byPath.values()) {
    if (e.type !== 'file' || e.link_of === undefined) continue;
    const first = byPath.get(e.link_of);
    if (first?.type === 'file' && first.link_of === undefined) byPath.set(first.path, { ...first, link_of: first.path });
  }
  const entries = [...byPath.values()].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return { entries, bytes };
}

/** Options of `captureTar`: what the grading sandbox gets instead of some of the agent's paths (in-process formats). */
export interface CaptureTarOptions {
  /** Paths left out (with everything under them). */
  omit?: (path: string) => boolean;
  /** Files added (e.g. a task's shipped runner files), after omission; they replace nothing that remains. */
  extra?: readonly { path: string; content: Uint8Array; mode: number }[];
}

/**
 * The capture as a tar for the grading sandbox: hard links as links (one inode, every name), symlinks as symlinks,
 * modes as captured. Directories come last, deepest first: tar creates parents as it goes, and a directory the agent
 * left unwritable (0555) gets its mode only after its contents are in.
 */
export async function captureTar(capture: WorkspaceCapture, opts: CaptureTarOptions = {}): Promise<Uint8Array> {
  const omitted = (p: string) => {
    if (!opts.omit) return false;
    const segs = p.split('/');
    for (let i = 1; i <= segs.length; i++) if (opts.omit(segs.slice(0, i).join('/'))) return true;
    return false;
  };
  const kept = capture.entries.filter((e) => !omitted(e.path));
  const p = pack();
  const chunks: Buffer[] = [];
  const done = new Promise<void>((resolve, reject) => {
    p.on('data', (c: unknown) => chunks.push(c as Buffer));
    p.on('end', resolve);
    p.on('error', reject);
  });
  const mtime = new Date(0);
  // The first kept name of each hard-link group carries the content; the others link to it.
  const carrier = new Map<string, string>();
  for (const e of kept) {
    if (e.type === 'file') {
      const group = e.link_of ?? e.path;
      const first = carrier.get(group);
      if (first !== undefined) p.entry({ name: e.path, type: 'link', linkname: first, mode: e.mode, mtime });
      else {
        carrier.set(group, e.path);
        p.entry({ name: e.path, type: 'file', mode: e.mode, mtime }, Buffer.from(e.content));
      }
    } else if (e.type === 'symlink') p.entry({ name: e.path, type: 'symlink', linkname: e.target, mode: 0o777, mtime });
  }
  for (const f of opts.extra ?? []) p.entry({ name: f.path, type: 'file', mode: f.mode, mtime }, Buffer.from(f.content));
  const dirs = kept.filter((e) => e.type === 'directory').sort((a, b) => b.path.split('/').length - a.path.split('/').length);
  for (const d of dirs) p.entry({ name: d.path, type: 'directory', mode: d.mode, mtime });
  p.finalize();
  await done;
  return new Uint8Array(Buffer.concat(chunks));
}

/** Identity of a capture (the grading cache key): every entry's path, type, mode, content, target and link. */
export function captureHash(capture: WorkspaceCapture): string {
  const lines = capture.entries.map((e) => {
    if (e.type === 'file')
      return `f ${e.mode.toString(8)} ${sha256Hex(e.content)} ${JSON.stringify(e.path)} ${e.link_of !== undefined ? JSON.stringify(e.link_of) : '-'}`;
    if (e.type === 'symlink') return `l ${JSON.stringify(e.path)} ${JSON.stringify(e.target)}`;
    return `d ${e.mode.toString(8)} ${JSON.stringify(e.path)}`;
  });
  return sha256Hex(lines.join('\n'));
}

/** One entry as grader-plan's `submission` option takes it: hard links as a `file` under every name. */
export interface SubmissionEntry {
  path: string;
  type: 'file' | 'directory' | 'symlink';
  mode: number;
  content?: Uint8Array;
  target?: string;
}

export function submissionEntries(capture: WorkspaceCapture): SubmissionEntry[] {
  return capture.entries.map((e) =>
    e.type === 'file'
      ? { path: e.path, type: 'file', mode: e.mode, content: e.content }
      : e.type === 'symlink'
        ? { path: e.path, type: 'symlink', mode: e.mode, target: e.target }
        : { path: e.path, type: 'directory', mode: e.mode },
  );
}

/** Looks a path up in a capture (no link is followed). */
export function captureIndex(capture: WorkspaceCapture): Map<string, CapturedEntry> {
  return new Map(capture.entries.map((e) => [e.path, e]));
}
