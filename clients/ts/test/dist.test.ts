// The client must work without the server code or tsx: bundle it the way `npm install` does
// (scripts/build-client.mjs) and drive an episode from plain Node importing only the bundle.

import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildClientBundles, type ClientBundles } from '../../../test/helpers/client-bundle.js';
import { REPO_ROOT, startServer, type TestServer } from '../../../test/helpers/server.js';

const DIST = join(REPO_ROOT, 'clients/ts/dist');

// A private copy of the node bundle next to the real one (so `ws` resolves from the repo's node_modules)
// that no parallel rebuild can rewrite while it is in use.
const COPY = join(DIST, `index.test-${process.pid}.mjs`);

let server: TestServer;
let bundles: ClientBundles;
beforeAll(async () => {
  bundles = await buildClientBundles();
  writeFileSync(COPY, bundles.index);
  server = await startServer({ fixtures: true });
});
afterAll(async () => {
  rmSync(COPY, { force: true });
  await server?.close();
});

describe('bundled client', () => {
  it('runs an episode from plain Node importing clients/ts/dist/index.js', async () => {
    const script = `
      const { connect, SandgymError } = await import(${JSON.stringify(pathToFileURL(COPY).href)});
      const out = [];
      for (const encoding of ['json', 'msgpack']) {
        const client = await connect(process.env.URL, { encoding });
        const env = await client.make('test/counter-v0');
        let r = await env.reset({ seed: 0 });
        const obs = [r.observation];
        for (;;) { r = await env.step(1); obs.push(r.observation); if (r.terminated || r.truncated) break; }
        let code;
        try { await env.step(1); } catch (e) { code = e instanceof SandgymError ? e.code : 'untyped'; }
        await env.close();
        await client.close();
        out.push({ encoding, obs, code });
      }
      console.log(JSON.stringify(out));
    `;
    // Plain node (no tsx loader): only the bundle and `ws` from node_modules. Async, because the
    // server under test lives in this process and must keep answering.
    const res = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], {
      cwd: REPO_ROOT,
      env: { ...process.env, URL: server.url },
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(res.stderr).toBe('');
    expect(JSON.parse(res.stdout.trim())).toEqual([
      { encoding: 'json', obs: [0, 1, 2, 3], code: 'RESET_NEEDED' },
      { encoding: 'msgpack', obs: [0, 1, 2, 3], code: 'RESET_NEEDED' },
    ]);
  });

  it('keeps node built-ins and ws out of both bundles', () => {
    for (const [file, code] of Object.entries(bundles)) {
      expect(code, file).not.toMatch(/from\s*["']node:|require\(["']node:/);
      // ws is loaded lazily by a variable specifier, never bundled (its browser build only throws).
      expect(code, file).not.toContain('ws does not work in the browser');
    }
  });
});
