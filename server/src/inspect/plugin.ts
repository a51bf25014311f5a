// Serves the web inspector: GET /inspect (the page) and a fixed set of assets under /inspect/.
// The page is a static client of /v2/ws like any other (no server state, no extra endpoints). Its
// script (page/main.ts plus the TS client) is bundled with esbuild in memory on first request and
// cached for the life of the process, so there is no build step and no stale bundle. The client's
// protocol import is redirected to page/protocol-lite.ts (codec + errors, no ajv: see there).
// Only names in ASSETS are served: there is no filesystem lookup by URL, hence no traversal.
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance, FastifyReply } from 'fastify';

interface Asset {
  type: string;
  load: () => Promise<string | Buffer>;
}

export interface InspectPluginOptions {
  /** URL path of the inspector page. Default /inspect. (Not `prefix`: fastify's register consumes that.) */
  path?: string;
}

const here = (rel: string) => fileURLToPath(new URL(rel, import.meta.url));

let bundle: Promise<{ js: string; map: string }> | null = null;

async function readPrebuilt(): Promise<{ js: string; map: string } | null> {
  try {
    const [js, map] = await Promise.all([readFile(here('./app.js'), 'utf8'), readFile(here('./app.js.map'), 'utf8')]);
    return { js, map };
  } catch {
    return null;
  }
}

/** Bundles the page script once per process (esbuild takes ~100 ms; the first page load pays it). */
export function buildInspectorBundle(): Promise<{ js: string; map: string }> {
  bundle ??= (async () => {
    // The compiled server (server/dist, what the npm package ships) has the bundle prebuilt next to
    // it by scripts/build.mjs; only a run from the TypeScript sources bundles here (esbuild is a dev tool).
    const prebuilt = await readPrebuilt();
    if (prebuilt) return prebuilt;
    const { build } = await import('esbuild');
    const result = await build({
      entryPoints: [here('./page/main.ts')],
      bundle: true,
      format: 'esm',
      platform: 'browser',
      target: 'es2022',
      minify: true,
      sourcemap: 'external',
      write: false,
      outfile: 'app.js',
      logLevel: 'silent',
      legalComments: 'none',
      plugins: [
        {
          name: 'protocol-lite',
          setup(b) {
            b.onResolve({ filter: /protocol\/src\/index\.js$/ }, () => ({ path: here('./page/protocol-lite.ts') }));
          },
        },
      ],
    });
    const js = result.outputFiles.find((f) => f.path.endsWith('app.js'));
    const map = result.outputFiles.find((f) => f.path.endsWith('app.js.map'));
    if (!js) throw new Error('esbuild produced no app.js');
    return { js: `${js.text}\n//# sourceMappingURL=app.js.map\n`, map: map?.text ?? '{}' };
  })();
  // A failed build is retried on the next request rather than cached forever.
  bundle.catch(() => (bundle = null));
  return bundle;
}

const ASSETS: Record<string, Asset> = {
  'app.js': { type: 'text/javascript; charset=utf-8', load: async () => (await buildInspectorBundle()).js },
  'app.js.map': { type: 'application/json; charset=utf-8', load: async () => (await buildInspectorBundle()).map },
  'inspector.css': { type: 'text/css; charset=utf-8', load: () => readFile(here('./static/inspector.css')) },
  'favicon.svg': { type: 'image/svg+xml', load: () => readFile(here('./static/favicon.svg')) },
};

// The page only talks to its own origin's WebSocket; everything else is locked down.
const CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self' ws: wss:",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

function secure(reply: FastifyReply): FastifyReply {
  return reply.header('x-content-type-options', 'nosniff').header('cache-control', 'no-cache').header('referrer-policy', 'no-referrer');
}

export async function inspectPlugin(app: FastifyInstance, opts: InspectPluginOptions = {}): Promise<void> {
  const prefix = (opts.path ?? '/inspect').replace(/\/+$/, '');
  const page = async (_req: unknown, reply: FastifyReply) => {
    const html = (await readFile(here('./static/index.html'), 'utf8')).replaceAll('{{PREFIX}}', prefix);
    return secure(reply).header('content-security-policy', CSP).type('text/html; charset=utf-8').send(html);
  };
  app.get(prefix, page);
  app.get(`${prefix}/`, page);
  app.get<{ Params: { name: string } }>(`${prefix}/:name`, async (req, reply) => {
    const asset = Object.hasOwn(ASSETS, req.params.name) ? ASSETS[req.params.name] : undefined;
    if (!asset) return reply.code(404).type('text/plain; charset=utf-8').send('not found\n');
    try {
      const body = await asset.load();
      return secure(reply).type(asset.type).send(body);
    } catch (err) {
      req.log.error({ err }, 'inspector asset failed');
      return reply
        .code(500)
        .type('text/plain; charset=utf-8')
        .send(`inspector asset ${req.params.name} failed: ${(err as Error).message}\n`);
    }
  });
}
