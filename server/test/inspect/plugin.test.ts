// The inspector's HTTP surface: the page and its assets with the right content types and headers,
// nothing else (no traversal, no directory listing, no prototype keys).
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inspectPlugin } from '../../src/inspect/plugin.js';

describe('inspect plugin', () => {
  let app: FastifyInstance;

  beforeAll(async () => {
    app = Fastify({ logger: false });
    await app.register(inspectPlugin);
    await app.ready();
  });

  afterAll(async () => {
    await app.close();
  });

  it('serves the page at /inspect and /inspect/ with a strict CSP', async () => {
    for (const url of ['/inspect', '/inspect/']) {
      const res = await app.inject({ url });
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(res.headers['x-content-type-options']).toBe('nosniff');
      const csp = String(res.headers['content-security-policy']);
      expect(csp).toContain("script-src 'self'");
      expect(csp).not.toContain('unsafe');
      expect(csp).toContain("connect-src 'self' ws: wss:");
      expect(res.body).toContain('<script type="module" src="/inspect/app.js"></script>');
      expect(res.body).toContain('href="/inspect/inspector.css"');
    }
  });

  it('serves each asset with its content type', async () => {
    const cases: [string, string, string][] = [
      ['/inspect/app.js', 'text/javascript; charset=utf-8', 'sourceMappingURL=app.js.map'],
      ['/inspect/app.js.map', 'application/json; charset=utf-8', '"mappings"'],
      ['/inspect/inspector.css', 'text/css; charset=utf-8', '.transcript'],
      ['/inspect/favicon.svg', 'image/svg+xml', '<svg'],
    ];
    for (const [url, type, snippet] of cases) {
      const res = await app.inject({ url });
      expect(res.statusCode, url).toBe(200);
      expect(res.headers['content-type'], url).toBe(type);
      expect(res.body, url).toContain(snippet);
    }
  });

  it('bundles the client without ajv, whose code generation the CSP forbids', async () => {
    const js = (await app.inject({ url: '/inspect/app.js' })).body;
    // ajv's compiler (and its error text) must not be in the bundle; the browser test proves the page runs.
    expect(js.includes('Error compiling schema')).toBe(false);
    expect(js.length).toBeLessThan(200_000);
  });

  it('serves nothing but its own assets', async () => {
    const urls = [
      '/inspect/../package.json',
      '/inspect/..%2Fpackage.json',
      '/inspect/%2e%2e%2f%2e%2e%2fpackage.json',
      '/inspect/..%5C..%5Cpackage.json',
      '/inspect/index.html',
      '/inspect/plugin.ts',
      '/inspect/static',
      '/inspect/page%2Fmain.ts',
      '/inspect/__proto__',
      '/inspect/constructor',
      '/inspect/hasOwnProperty',
      '/inspect/app.js%00.css',
    ];
    for (const url of urls) {
      const res = await app.inject({ url });
      expect([400, 404], url).toContain(res.statusCode);
      expect(res.body, url).not.toContain('"name": "sandgym"');
      expect(res.body, url).not.toContain('inspectPlugin');
    }
  });

  it('mounts at another path when asked', async () => {
    const other = Fastify({ logger: false });
    await other.register(inspectPlugin, { path: '/debug/ui/' });
    const page = await other.inject({ url: '/debug/ui' });
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('src="/debug/ui/app.js"');
    expect((await other.inject({ url: '/debug/ui/inspector.css' })).statusCode).toBe(200);
    expect((await other.inject({ url: '/inspect' })).statusCode).toBe(404);
    await other.close();
  });
});
