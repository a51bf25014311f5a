// The soak's short mode in CI (issue #13 item 8): bench/soak.ts runs real shell-v0 and code-v0 episodes
// at 80% of the pools' capacity against a real server (the CLI, docker driver) for 45 s. Asserted: every
// episode got the reference solution's reward (no error of any code), both envs ran, the server was
// sampled, and zero containers of that server remain after its clean shutdown. No timing or memory
// figure is asserted here (the machine is shared); the 30-minute figures are in BENCHMARKS.md.
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { expect, it } from 'vitest';
import { dockerFacility, gate } from '../../server/test/sandbox/facilities.js';
import { REPO_ROOT } from '../helpers/server.js';

const RUN = gate('docker', await dockerFacility()) && gate('docker', await dockerFacility('sandgym/python:1'));

interface Summary {
  errors: { total: number; by_code: Record<string, number>; first: string[] };
  episodes: { 'shell-v0': number; 'code-v0': number };
  containers: { max: number; leaked_after_shutdown: number };
  samples: number;
  rss_mb: { max: number };
}

it.skipIf(!RUN)(
  'soak, short mode (45 s at 80% of capacity): zero errors, both envs served, zero containers left after shutdown',
  async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'sandgym-soak-test-'));
    try {
      const json = path.join(dir, 'soak.json');
      const out = await new Promise<string>((resolve, reject) => {
        execFile(
          path.join(REPO_ROOT, 'node_modules', '.bin', 'tsx'),
          ['bench/soak.ts', '--seconds', '45', '--max-total', '5', '--sample-s', '5', '--json', json],
          { cwd: REPO_ROOT, timeout: 240_000, maxBuffer: 16 * 1024 * 1024 },
          (err, stdout, stderr) => (err ? reject(new Error(`soak failed: ${err.message}\n${stdout}\n${stderr.slice(-4000)}`)) : resolve(stdout)),
        );
      });
      const { summary } = JSON.parse(await readFile(json, 'utf8')) as { summary: Summary };
      expect(summary.errors.total, `${out}\n${summary.errors.first.join('\n')}`).toBe(0);
      expect(summary.episodes['shell-v0']).toBeGreaterThan(0);
      expect(summary.episodes['code-v0']).toBeGreaterThan(0);
      expect(summary.samples).toBeGreaterThan(0);
      expect(summary.rss_mb.max).toBeGreaterThan(0);
      // Sandboxes existed while it ran, and none after the clean shutdown.
      expect(summary.containers.max).toBeGreaterThan(0);
      expect(summary.containers.leaked_after_shutdown).toBe(0);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  },
  300_000,
);
