// Builds the client bundles the way `npm install` does (scripts/build-client.mjs) and returns their
// contents. Test files run in parallel workers; a cross-process lock keeps one worker from reading a
// bundle while another rewrites it.

import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, rmdirSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { REPO_ROOT } from './server.js';

const LOCK = join(tmpdir(), 'sandgym-client-build.lock');
const STALE_MS = 120_000;

async function withLock<T>(fn: () => Promise<T>): Promise<T> {
  const t0 = Date.now();
  for (;;) {
    try {
      mkdirSync(LOCK);
      break;
    } catch {
      try {
        if (Date.now() - statSync(LOCK).mtimeMs > STALE_MS) rmdirSync(LOCK); // a crashed holder
      } catch {
        /* released meanwhile */
      }
      if (Date.now() - t0 > STALE_MS) throw new Error(`timed out waiting for ${LOCK}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  try {
    return await fn();
  } finally {
    rmdirSync(LOCK);
  }
}

export interface ClientBundles {
  /** clients/ts/dist/index.js (node platform, ws external). */
  index: string;
  /** clients/ts/dist/browser.js. */
  browser: string;
}

export function buildClientBundles(): Promise<ClientBundles> {
  return withLock(async () => {
    await promisify(execFile)(process.execPath, ['scripts/build-client.mjs'], { cwd: REPO_ROOT });
    return {
      index: readFileSync(join(REPO_ROOT, 'clients/ts/dist/index.js'), 'utf8'),
      browser: readFileSync(join(REPO_ROOT, 'clients/ts/dist/browser.js'), 'utf8'),
    };
  });
}
