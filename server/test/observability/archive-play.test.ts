// `sandgym play ENV -- --archive DIR`: the in-process server archives the episodes played, with serve's
// options and checks (exit 2 for a bad archive flag, 4 for a place it cannot write), flushed when play
// leaves at end of input and when it is sent SIGTERM. Real CLI processes, real files.
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadArchive } from '../../src/observability/archive/reader.js';
import { BIN } from '../helpers/cli.js';

const dirs: string[] = [];
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

async function tempDir(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), 'sandgym-archive-play-'));
  dirs.push(d);
  return d;
}

interface Play {
  done: Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>;
  /** Resolves once stdout contains `text`. */
  waitFor(text: string): Promise<void>;
  send(line: string): void;
  kill(signal: NodeJS.Signals): void;
}

function play(args: string[], input: string | null): Play {
  const child = spawn(process.execPath, [BIN, 'play', ...args], { env: { ...process.env, SANDGYM_HISTORY_FILE: '' }, stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  const waiters: { text: string; resolve: () => void }[] = [];
  child.stdout.on('data', (d: Buffer) => {
    stdout += d.toString();
    for (const w of waiters.splice(0)) {
      if (stdout.includes(w.text)) w.resolve();
      else waiters.push(w);
    }
  });
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  const done = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
  if (input !== null) child.stdin.end(input);
  return {
    done,
    waitFor: (text) => (stdout.includes(text) ? Promise.resolve() : new Promise((resolve) => waiters.push({ text, resolve }))),
    send: (line) => child.stdin.write(`${line}\n`),
    kill: (signal) => child.kill(signal),
  };
}

describe('sandgym play -- --archive', () => {
  it('archives the episodes played (actions, a refused action, the outcome) and writes them when play leaves', async () => {
    const dir = await tempDir();
    const r = await play(['test/counter-v0', '--fixtures', '--seed', '4', '--', '--archive', dir], '1\n7\n1\n1\n').done;
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('episode over (terminated) after 3 steps, return 3');
    const records = await loadArchive(dir);
    const played = records.filter((x) => x.end === 'terminated');
    expect(played).toHaveLength(1);
    expect(played[0]).toMatchObject({ env_id: 'test/counter-v0', seed: 4, outcome: 'success', length: 3, return: 3 });
    expect(played[0]?.steps.map((s) => s.action)).toEqual([1, 1, 1]);
    expect(played[0]?.request_errors.map((e) => [e.code, e.action])).toEqual([['INVALID_ACTION', 7]]);
  }, 90_000);

  it('SIGTERM while playing: the running episode is archived (closed) before play exits 0', async () => {
    const dir = await tempDir();
    const p = play(['test/counter-v0', '--fixtures', '--seed', '2', '--', '--archive', dir, '--archive-flush-ms', '3600000'], null);
    await p.waitFor('in-process server on');
    p.send('1');
    await p.waitFor('reward 1');
    p.kill('SIGTERM');
    const r = await p.done;
    expect(r.code).toBe(0);
    const records = await loadArchive(dir);
    expect(records.map((x) => [x.env_id, x.end, x.length])).toEqual([['test/counter-v0', 'closed', 1]]);
  }, 90_000);

  it('refuses bad archive flags as serve does (exit 2) and an archive it cannot write (exit 4)', async () => {
    const dir = await tempDir();
    const file = join(dir, 'a-file');
    await writeFile(file, 'not a directory');
    const [stray, bad, unwritable] = await Promise.all([
      play(['test/counter-v0', '--fixtures', '--', '--archive-max-mb', '5'], '').done,
      play(['test/counter-v0', '--fixtures', '--', '--archive', 's3://A_B/x'], '').done,
      play(['test/counter-v0', '--fixtures', '--', '--archive', join(file, 'sub')], '').done,
    ]);
    expect(stray.code).toBe(2);
    expect(stray.stderr).toContain('--archive-max-mb needs --archive');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('is not a valid S3 bucket name');
    expect(unwritable.code).toBe(4);
    expect(unwritable.stderr).toContain(`--archive ${join(file, 'sub')}: cannot write there`);
  }, 90_000);
});
