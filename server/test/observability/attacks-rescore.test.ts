// Attacks on `sandgym rescore` through an archived workspace tar (issue 15): the tar an archive holds is
// the agent's (and an archive file may be edited by anyone who can write the bucket). Rescore must grade
// it exactly as training does: read in memory as a workspace capture (a `..`, an absolute path, a link out or a
// device is refused: a score of 0) and graded in a fresh sandbox; never extracted on the host. A tar that cannot be read is that
// episode's typed failure, not the end of the whole re-grade.
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { pack } from 'tar-stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SHIPPED_TASKS_DIR } from '../../../envs/src/code/shipped.js';
import { runRescore } from '../../src/cli/rescore.js';
import type { EpisodeRecord } from '../../src/observability/archive/format.js';
import { openSandboxProvider } from '../../src/env-host/sandbox-adapter.js';
import { dockerFacility, gate } from '../sandbox/facilities.js';

const run = gate('docker', await dockerFacility('sandgym/python:1'));

let dir: string;
let canary: string;

async function hostileTar(): Promise<Buffer> {
  const p = pack();
  const chunks: Buffer[] = [];
  const done = new Promise<void>((resolve, reject) => {
    p.on('data', (c: unknown) => void chunks.push(c as Buffer));
    p.on('end', resolve);
    p.on('error', reject);
  });
  const file = (name: string, text: string) => p.entry({ name, type: 'file', mode: 0o644 }, Buffer.from(text));
  file(`../../../../../../..${canary}/dotdot`, 'escaped via ..');
  file(`${canary}/absolute`, 'escaped via an absolute path');
  p.entry({ name: 'slug.py', type: 'symlink', linkname: '/etc/passwd' });
  p.entry({ name: 'link_out', type: 'symlink', linkname: canary });
  file('link_out/through_symlink', 'escaped through a symlink');
  p.entry({ name: 'hard', type: 'link', linkname: '/etc/shadow' });
  p.entry({ name: 'dev', type: 'character-device', devmajor: 1, devminor: 3 });
  p.entry({ name: 'fifo', type: 'fifo' });
  p.finalize();
  await done;
  return Buffer.concat(chunks);
}

function record(id: string, tar: Buffer): EpisodeRecord {
  return {
    format: 'sandgym.episode/1',
    episode_id: id,
    server: { instance: 'attack', version: '0' },
    session_id: `s_${id}`,
    connection_id: null,
    env_id: 'code-v0',
    kwargs: {},
    task: { id: 'py-slugify', split: 'train', content_hash: null },
    seed: 1,
    options: {},
    started_at: '2026-01-01T00:00:00.000Z',
    ended_at: '2026-01-01T00:00:01.000Z',
    end: 'terminated',
    outcome: 'success',
    score: 1,
    success: true,
    return: 1,
    length: 1,
    reset: null,
    steps: [],
    request_errors: [],
    grade: { score: 1 },
    grader: null,
    final_workspace: { encoding: 'tar+base64', bytes: tar.byteLength, sha256: createHash('sha256').update(tar).digest('hex'), data: tar.toString('base64') },
  };
}

beforeAll(async () => {
  if (!run) return;
  dir = await mkdtemp(join(tmpdir(), 'sandgym-rescore-attack-'));
  canary = join(dir, 'canary');
}, 60_000);

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe.runIf(run)('rescore attacks: a hostile archived workspace', () => {
  it('grades a tar of .., absolute paths, links and devices in a sandbox (nothing on the host), and a corrupt tar fails only its own episode', async () => {
    const good = await hostileTar();
    // A tar whose header promises more data than there is (its sha256 matches: the archive was edited).
    const corrupt = Buffer.concat([good.subarray(0, 512 + 3), Buffer.alloc(0)]);
    const file = join(dir, 'hostile.jsonl.gz');
    await writeFile(file, gzipSync([record('ep_hostile', good), record('ep_corrupt', corrupt)].map((r) => JSON.stringify(r)).join('\n') + '\n'));
    const out: string[] = [];
    const err: string[] = [];
    const code = await runRescore(
      [file, '--tasks', SHIPPED_TASKS_DIR, '--driver', 'docker', '--json'],
      { out: (t) => void out.push(t), err: (t) => void err.push(t) },
      { openSandboxProvider },
    );
    const lines = out
      .join('')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    // Nothing of the tar reached the host.
    expect(existsSync(canary)).toBe(false);
    const hostile = lines.find((l) => l.episode_id === 'ep_hostile');
    expect(hostile).toMatchObject({ task_id: 'py-slugify', old_score: 1, new_score: 0, changed: true });
    const summary = lines.at(-1) as { summary: { episodes: number; regraded: number; skipped: number }; skipped: { episode_id: string; reason: string }[] };
    expect(summary.summary.episodes).toBe(2);
    expect(summary.skipped.map((s) => s.episode_id)).toEqual(['ep_corrupt']);
    expect(summary.skipped[0]?.reason).toMatch(/not a readable tar/);
    expect(code).toBe(1);
  }, 600_000);
});
