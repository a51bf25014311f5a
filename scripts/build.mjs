// `npm run build` (also run by `prepack` and `prepare`): compiles the TypeScript to plain ESM so the
// published package runs on plain Node, with no TypeScript loader and no build tool at run time.
//
// Layout: each source tree gets a `dist` sibling at the same depth (protocol/src -> protocol/dist,
// envs/src -> envs/dist, server/src -> server/dist, sandbox-contract/index.ts ->
// sandbox-contract/dist/index.js). Keeping the depth means the paths the code resolves from
// import.meta.url (envs/tasks, envs/data, package.json, the bubblewrap package root) still land on
// the same files; relative imports that cross into another tree are rewritten to its dist. Files
// under src that are not TypeScript (JSON schemas, harness scripts, inspector static files) are
// copied next to the compiled code. Declarations go to `types/` (one tree mirroring the sources, so
// their relative imports resolve among themselves). The TS client keeps its two bundles
// (scripts/build-client.mjs), and the web inspector's page script is bundled here once, so the
// server never needs esbuild at run time.
//
// The output is never read by the tests or by the repo's bin when the sources are newer (see
// bin/sandgym.js): it is the artefact `npm pack` ships.
import { build, transform } from 'esbuild';
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const TARGET = 'node20';

/** Source tree -> output tree (both relative to ROOT). */
const TREES = [
  { src: 'protocol/src', out: 'protocol/dist' },
  { src: 'envs/src', out: 'envs/dist' },
  { src: 'server/src', out: 'server/dist' },
  { src: 'sandbox-contract', out: 'sandbox-contract/dist', only: ['index.ts'] },
];

/** Not part of the server's run time: the inspector page is bundled for the browser below. */
const SKIP_DIRS = ['server/src/inspect/page/'];

function walk(dir, rel = '') {
  const out = [];
  for (const name of readdirSync(path.join(dir, rel)).sort()) {
    const r = path.join(rel, name);
    if (statSync(path.join(dir, r)).isDirectory()) out.push(...walk(dir, r));
    else out.push(r);
  }
  return out;
}

/** Maps an absolute source file to its compiled file, or null when it is not in a compiled tree. */
function outputOf(absSource) {
  const rel = path.relative(ROOT, absSource).split(path.sep).join('/');
  for (const t of TREES) {
    if (t.only ? t.only.some((f) => rel === `${t.src}/${f}`) : rel.startsWith(`${t.src}/`)) {
      return path.join(ROOT, t.out, rel.slice(t.src.length + 1));
    }
  }
  // The server imports the TS client's entry point: the node bundle stands in for it.
  if (rel === 'clients/ts/src/index.ts') return path.join(ROOT, 'clients/ts/dist/index.js');
  return null;
}

const SPECIFIER = /(\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)(['"])(\.{1,2}\/[^'"]+|#[a-z-]+\/[^'"]+)\2/g;

/** package.json `imports` (`#protocol/*.js` -> `./protocol/src/*.ts`, ...): the source a subpath import names. */
const SUBPATHS = Object.entries(JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')).imports ?? {}).map(([key, target]) => {
  const [head, tail] = key.split('*');
  const [thead, ttail] = target.split('*');
  return { head, tail, thead, ttail };
});

/** The absolute source file a specifier names: relative to the importer, or through package.json `imports`. */
function sourceOf(spec, absSource) {
  if (!spec.startsWith('#')) return path.resolve(path.dirname(absSource), spec.replace(/\.js$/, '.ts'));
  for (const m of SUBPATHS) {
    if (spec.startsWith(m.head) && spec.endsWith(m.tail))
      return path.join(ROOT, `${m.thead}${spec.slice(m.head.length, spec.length - m.tail.length)}${m.ttail}`);
  }
  throw new Error(`${path.relative(ROOT, absSource)}: '${spec}' matches no package.json imports entry`);
}

/**
 * Rewrites specifiers that leave a tree (relative ones, and subpath imports such as `#protocol/index.js`,
 * which name the sources) so they point at the other tree's output: the published package runs without
 * the sources, so nothing compiled may go through package.json `imports`.
 */
function rewriteImports(code, absSource, absOut) {
  return code.replace(SPECIFIER, (whole, lead, quote, spec) => {
    const target = sourceOf(spec, absSource);
    const mapped = outputOf(target);
    if (mapped === null) {
      if (spec.endsWith('.js')) throw new Error(`${path.relative(ROOT, absSource)}: import '${spec}' leaves the compiled trees`);
      return whole;
    }
    let rel = path.relative(path.dirname(absOut), mapped.replace(/\.ts$/, '.js')).split(path.sep).join('/');
    if (!rel.startsWith('.')) rel = `./${rel}`;
    return `${lead}${quote}${rel}${quote}`;
  });
}

async function compileTrees() {
  let files = 0;
  for (const t of TREES) {
    const srcDir = path.join(ROOT, t.src);
    const outDir = path.join(ROOT, t.out);
    rmSync(outDir, { recursive: true, force: true });
    const entries = (t.only ?? walk(srcDir)).filter((f) => !SKIP_DIRS.some((d) => `${t.src}/${f.split(path.sep).join('/')}`.startsWith(d)));
    for (const rel of entries) {
      const abs = path.join(srcDir, rel);
      if (rel.endsWith('.d.ts')) continue;
      if (/\.test\.ts$/.test(rel)) continue;
      if (rel.endsWith('.ts')) {
        const out = path.join(outDir, rel.replace(/\.ts$/, '.js'));
        const { code } = await transform(readFileSync(abs, 'utf8'), { loader: 'ts', format: 'esm', target: TARGET, sourcefile: abs, legalComments: 'inline' });
        mkdirSync(path.dirname(out), { recursive: true });
        writeFileSync(out, rewriteImports(code, abs, out));
        files++;
      } else {
        // Assets read at run time relative to the code (task schema, harness scripts, static files).
        const out = path.join(outDir, rel);
        mkdirSync(path.dirname(out), { recursive: true });
        copyFileSync(abs, out);
      }
    }
  }
  return files;
}

/** The web inspector's page script, bundled for the browser once (server/src/inspect/plugin.ts serves it). */
async function bundleInspector() {
  const here = (rel) => path.join(ROOT, 'server/src/inspect', rel);
  const outfile = path.join(ROOT, 'server/dist/inspect/app.js');
  await build({
    entryPoints: [here('page/main.ts')],
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    minify: true,
    sourcemap: 'external',
    outfile,
    logLevel: 'warning',
    legalComments: 'none',
    plugins: [
      {
        name: 'protocol-lite',
        setup(b) {
          b.onResolve({ filter: /(protocol\/src|#protocol)\/index\.js$/ }, () => ({ path: here('page/protocol-lite.ts') }));
        },
      },
    ],
  });
  // As the plugin's in-memory build does: the map is served next to the script.
  writeFileSync(outfile, `${readFileSync(outfile, 'utf8')}\n//# sourceMappingURL=app.js.map\n`);
}

/** Declarations for the package's entry points (no type check here: `npm run typecheck` does that). */
function declarations() {
  rmSync(path.join(ROOT, 'types'), { recursive: true, force: true });
  const tsc = path.join(ROOT, 'node_modules/typescript/bin/tsc');
  const r = spawnSync(process.execPath, [tsc, '-p', path.join(ROOT, 'tsconfig.build.json')], { cwd: ROOT, stdio: 'inherit' });
  if (r.status !== 0) throw new Error(`tsc (declarations) exited with ${r.status}`);
  // The declarations keep the sources' subpath imports (`#protocol/index.js`): pointed at their
  // declaration files instead, since a consumer's package.json `imports` would name sources not shipped.
  const types = path.join(ROOT, 'types');
  for (const rel of walk(types)) {
    if (!rel.endsWith('.d.ts')) continue;
    const abs = path.join(types, rel);
    const src = readFileSync(abs, 'utf8');
    const out = src.replace(SPECIFIER, (whole, lead, quote, spec) => {
      if (!spec.startsWith('#')) return whole;
      const target = path.join(types, path.relative(ROOT, sourceOf(spec, abs)).replace(/\.ts$/, '.js'));
      let r = path.relative(path.dirname(abs), target).split(path.sep).join('/');
      if (!r.startsWith('.')) r = `./${r}`;
      return `${lead}${quote}${r}${quote}`;
    });
    if (out !== src) writeFileSync(abs, out);
  }
}

const t0 = Date.now();
// The stamp carries the build's start time: a source edited while the build ran counts as newer.
const started = new Date();
const files = await compileTrees();
await import('./build-client.mjs');
await bundleInspector();
if (!process.argv.includes('--no-types')) declarations();
if (!existsSync(path.join(ROOT, 'server/dist/cli/main.js'))) throw new Error('build produced no server/dist/cli/main.js');
// The bin compares this stamp with the sources' mtimes to tell a current build from a stale one.
const stamp = path.join(ROOT, 'server/dist/.build-stamp');
writeFileSync(stamp, `${started.toISOString()}\n`);
utimesSync(stamp, started, started);
console.error(
  `[build] ${files} modules compiled, client and inspector bundled${process.argv.includes('--no-types') ? '' : ', declarations in types/'} in ${Date.now() - t0} ms`,
);
