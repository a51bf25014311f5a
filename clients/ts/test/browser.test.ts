// The browser bundle (clients/ts/dist/browser.js, what the web inspector loads) in real headless
// Chromium, using the browser's own WebSocket against a live server: an episode in both encodings.
// Skips without Chromium unless SANDGYM_REQUIRE_BROWSER=1, where it must run.

import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildClientBundles } from '../../../test/helpers/client-bundle.js';
import { startServer, type TestServer } from '../../../test/helpers/server.js';

const CHROMIUM = process.env.SANDGYM_CHROMIUM ?? '/usr/bin/chromium';
const missing = existsSync(CHROMIUM) ? null : `no Chromium at ${CHROMIUM} (install Debian's chromium or set SANDGYM_CHROMIUM)`;
const required = process.env.SANDGYM_REQUIRE_BROWSER === '1';

describe.skipIf(missing !== null && !required)(`browser bundle in Chromium${missing ? ` (skipped: ${missing})` : ''}`, () => {
  let server: TestServer;
  let context: BrowserContext;
  let profile: string;
  let bundle: string;

  beforeAll(async () => {
    if (missing) throw new Error(`SANDGYM_REQUIRE_BROWSER=1 but ${missing}`);
    bundle = (await buildClientBundles()).browser;
    server = await startServer({ fixtures: true });
    profile = mkdtempSync(join(tmpdir(), 'sandgym-client-chromium-'));
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
  });

  afterAll(async () => {
    await context?.close();
    await server?.close();
    if (profile) rmSync(profile, { recursive: true, force: true });
  });

  it('runs an episode with the browser WebSocket in both encodings', async () => {
    const page = context.pages()[0] ?? (await context.newPage());
    const pageErrors: string[] = [];
    page.on('pageerror', (e) => pageErrors.push(e.message));
    // A string, not a function: vitest would rewrite a dynamic import() inside a function body.
    const script = `(async () => {
      const code = ${JSON.stringify(bundle)};
      const mod = await import('data:text/javascript;base64,' + btoa(unescape(encodeURIComponent(code))));
      const results = [];
      for (const encoding of ['json', 'msgpack']) {
        const frames = [];
        const client = await mod.connect(${JSON.stringify(server.url)}, { encoding, onFrame: (f) => frames.push(f.direction + ':' + typeof f.data) });
        const env = await client.make('test/counter-v0');
        let r = await env.reset({ seed: 0 });
        const obs = [r.observation];
        for (;;) {
          r = await env.step(1);
          obs.push(r.observation);
          if (r.terminated || r.truncated) break;
        }
        let code;
        try { await env.step(1); } catch (e) { code = e instanceof mod.SandgymError ? e.code : 'untyped'; }
        await client.close();
        results.push({ encoding, obs, code, server: client.serverInfo.name, firstFrames: frames.slice(0, 2) });
      }
      return results;
    })()`;
    const out = await page.evaluate(script);
    expect(pageErrors).toEqual([]);
    expect(out).toEqual([
      { encoding: 'json', obs: [0, 1, 2, 3], code: 'RESET_NEEDED', server: 'sandgym', firstFrames: ['sent:string', 'received:string'] },
      { encoding: 'msgpack', obs: [0, 1, 2, 3], code: 'RESET_NEEDED', server: 'sandgym', firstFrames: ['sent:object', 'received:object'] },
    ]);
  });
});
