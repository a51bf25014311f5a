// The npm package as a user gets it: build and pack a copy of this checkout, install the tarball into
// an empty folder outside the repo, and use it with plain Node (no tsx, no esbuild, no TypeScript):
// `npx sandgym --help`, a server from the installed bin, the README's TypeScript episode, and the
// `sandgym`, `sandgym/protocol`, `sandgym/envs` entry points. Also checks what the tarball holds (no
// tests, benchmarks, CI, Python client, TypeScript sources or eval-split tasks) and that installing
// it on this Node warns about no engine.
//
// The pack runs in a staging copy, not in the checkout, so rebuilding server/dist never races other
// tests that run bin/sandgym.js. `npm install` needs the registry (or a warm npm cache).
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, sep } from 'node:path';
import { promisify } from 'node:util';
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../helpers/server.js';

const CHROMIUM = process.env.SANDGYM_CHROMIUM ?? '/usr/bin/chromium';
const NO_BROWSER = existsSync(CHROMIUM) || process.env.SANDGYM_REQUIRE_BROWSER === '1' ? null : `no Chromium at ${CHROMIUM}`;

const run = promisify(execFile);
const work = mkdtempSync(join(tmpdir(), 'sandgym-package-'));
const stage = join(work, 'stage');
const user = join(work, 'user');

/** What the build needs from the checkout (everything else stays behind). */
const STAGED = [
  'package.json',
  'package-lock.json',
  'tsconfig.json',
  'tsconfig.build.json',
  'README.md',
  'CHANGELOG.md',
  'bin',
  'scripts',
  'docs',
  'protocol',
  'sandbox-contract',
  'envs',
  'server/src',
  'clients/ts',
];
const NOT_STAGED = /(^|\/)(node_modules|dist|test|\.venv|__pycache__)(\/|$)/;

let tarball = '';
let files: string[] = [];
let installLog = '';
let server: ChildProcess | null = null;
let url = '';

function evalTaskDirs(): string[] {
  const root = join(REPO_ROOT, 'envs/tasks');
  return readdirSync(root).filter((t) => {
    const spec = join(root, t, 'task.json');
    return existsSync(spec) && (JSON.parse(readFileSync(spec, 'utf8')) as { split?: string }).split === 'eval';
  });
}

beforeAll(async () => {
  mkdirSync(stage);
  for (const p of STAGED) {
    cpSync(join(REPO_ROOT, p), join(stage, p), {
      recursive: true,
      filter: (src) =>
        !NOT_STAGED.test(
          src
            .slice(REPO_ROOT.length + 1)
            .split(sep)
            .join('/'),
        ),
    });
  }
  symlinkSync(join(REPO_ROOT, 'node_modules'), join(stage, 'node_modules'));
  // What `prepack` runs (asserted below), then pack without scripts so it runs once.
  await run(process.execPath, ['scripts/build.mjs'], { cwd: stage, timeout: 300_000 });
  const packed = await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', work], { cwd: stage, timeout: 120_000 });
  const info = (JSON.parse(packed.stdout) as { filename: string; files: { path: string }[] }[])[0]!;
  tarball = join(work, info.filename);
  files = info.files.map((f) => f.path);

  mkdirSync(user);
  writeFileSync(join(user, 'package.json'), JSON.stringify({ name: 'first-user', version: '1.0.0', private: true, type: 'module' }));
  const installed = await run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', tarball], { cwd: user, timeout: 300_000 });
  installLog = installed.stdout + installed.stderr;
}, 600_000);

afterAll(async () => {
  if (server && server.exitCode === null) {
    const exited = new Promise((r) => server!.on('exit', r));
    server.kill('SIGTERM');
    await exited;
  }
  rmSync(work, { recursive: true, force: true });
});

describe('the packed tarball', () => {
  it('holds the compiled code, declarations and assets, and nothing of the development tree', () => {
    for (const f of [
      'bin/sandgym.js',
      'server/dist/cli/main.js',
      'server/dist/index.js',
      'server/dist/inspect/app.js',
      'protocol/dist/index.js',
      'envs/dist/index.js',
      'envs/dist/code/task-schema.json',
      'sandbox-contract/dist/index.js',
      'clients/ts/dist/index.js',
      'clients/ts/dist/browser.js',
      'types/server/src/index.d.ts',
      'types/clients/ts/src/index.d.ts',
      'envs/data/wordle-words.txt',
      'README.md',
      'package.json',
    ]) {
      expect(files, f).toContain(f);
    }
    const offending = files.filter(
      (f) =>
        /^(test|bench|\.ci|clients\/python|scripts)\//.test(f) ||
        /(^|\/)test\//.test(f.replace(/^envs\/tasks\/[^/]+\/tests\//, '')) ||
        (f.endsWith('.ts') && !f.endsWith('.d.ts')),
    );
    expect(offending).toEqual([]);
  });

  it('publishes no eval-split task (hidden tests and reference solutions stay in the repository)', () => {
    const evals = evalTaskDirs();
    expect(evals.length).toBeGreaterThan(0);
    for (const t of evals)
      expect(
        files.filter((f) => f.startsWith(`envs/tasks/${t}/`)),
        t,
      ).toEqual([]);
    expect(files.some((f) => /^envs\/tasks\/[^/]+\/tests\//.test(f))).toBe(true); // train tasks are shipped
    // Repository tasks: split by package, so an eval package's sources (base tree, hidden tests, fix) stay here too.
    const manifest = JSON.parse(readFileSync(join(REPO_ROOT, 'envs/repo-sources/manifest.json'), 'utf8')) as {
      packages: Record<string, { split: string }>;
    };
    const repoEval = Object.entries(manifest.packages).filter(([, p]) => p.split === 'eval');
    expect(repoEval.length).toBeGreaterThan(0);
    for (const [pkg] of repoEval)
      expect(
        files.filter((f) => f.startsWith(`envs/repo-sources/${pkg}/`)),
        pkg,
      ).toEqual([]);
    expect(files).toContain('envs/repo-sources/sqlparse/instances.jsonl'); // train packages are shipped
  });

  it('declares no build tool as a dependency, exports only JavaScript and declarations, builds at prepack', () => {
    const pkg = JSON.parse(readFileSync(join(user, 'node_modules/sandgym/package.json'), 'utf8')) as {
      dependencies: Record<string, string>;
      exports: Record<string, string | Record<string, string>>;
      scripts: Record<string, string>;
    };
    for (const tool of ['esbuild', 'tsx', 'typescript', 'vite', 'vitest']) expect(Object.keys(pkg.dependencies)).not.toContain(tool);
    const targets = Object.values(pkg.exports).flatMap((e) => (typeof e === 'string' ? [e] : Object.values(e)));
    for (const t of targets) expect(t).toMatch(/\.(js|d\.ts|json)$/);
    expect(pkg.scripts.prepack).toBe('node scripts/build.mjs');
  });

  it('installs into an empty folder without engine warnings and without tsx or esbuild', () => {
    expect(installLog).not.toMatch(/EBADENGINE|Unsupported engine/);
    expect(existsSync(join(user, 'node_modules/sandgym/server/dist/cli/main.js'))).toBe(true);
    expect(existsSync(join(user, 'node_modules/tsx'))).toBe(false);
    expect(existsSync(join(user, 'node_modules/esbuild'))).toBe(false);
  });
});

describe('the installed package with plain node', () => {
  it('`npx sandgym --help` and `--version`', async () => {
    const help = await run('npx', ['--no-install', 'sandgym', '--help'], { cwd: user, timeout: 60_000 });
    expect(help.stdout).toMatch(/^Usage: sandgym <command>/);
    const version = await run(process.execPath, ['node_modules/.bin/sandgym', '--version'], { cwd: user, timeout: 60_000 });
    expect(version.stdout).toMatch(/^sandgym \d+\.\d+\.\d+ /);
  });

  it('serves, and the README TypeScript episode runs against it', async () => {
    server = spawn(process.execPath, ['node_modules/.bin/sandgym', 'serve', '--port', '0', '--driver', 'none', '--log-level', 'warn'], {
      cwd: user,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    server.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    url = await new Promise<string>((resolve, reject) => {
      server!.stdout!.on('data', (d: Buffer) => {
        out += d.toString();
        const m = /^sandgym listening on (ws:\/\/\S+)$/m.exec(out);
        if (m) resolve(m[1]!);
      });
      server!.on('exit', (code) => reject(new Error(`installed server exited with ${code}: ${err}`)));
    });

    const readme = readFileSync(join(REPO_ROOT, 'README.md'), 'utf8');
    const block = /## An episode in TypeScript\s+```ts\n([\s\S]*?)```/.exec(readme)?.[1];
    expect(block, 'README has a TypeScript episode').toBeDefined();
    expect(block).toContain("from 'sandgym/client'");
    writeFileSync(join(user, 'episode.mjs'), block!.replaceAll('ws://127.0.0.1:8765/v2/ws', url));
    const ep = await run(process.execPath, ['episode.mjs'], { cwd: user, timeout: 60_000 });
    expect(ep.stderr).toBe('');
    expect(ep.stdout).toMatch(/crane -> /);
    expect(ep.stdout).toMatch(/information/);

    // The web inspector's script comes prebuilt (no esbuild in this install).
    const app = await fetch(`${url.replace(/^ws/, 'http').replace(/\/v\d+\/ws$/, '')}/inspect/app.js`);
    expect(app.status).toBe(200);
    expect((await app.text()).length).toBeGreaterThan(1000);
  });

  it('loads a JavaScript --env-module; a TypeScript one without tsx fails in one line naming tsx (exit 3)', async () => {
    const def = `{ id: 'user/coin-v0', description: 'coin', observation_space: { type: 'discrete', n: 1 }, action_space: { type: 'discrete', n: 2 }, max_episode_steps: 1, reward_range: [0, 1],
      create: () => ({ reset: async () => ({ observation: 0 }), step: async (a) => ({ observation: 0, reward: a, terminated: true }), close: async () => {} }) }`;
    writeFileSync(join(user, 'my-env.mjs'), `export default ${def};\n`);
    writeFileSync(join(user, 'my-env.ts'), `const n: number = 1;\nexport default ${def};\n`);
    const js = await run(process.execPath, ['node_modules/.bin/sandgym', 'envs', '--env-module', './my-env.mjs'], { cwd: user, timeout: 60_000 });
    expect(js.stdout).toMatch(/^user\/coin-v0\s+coin$/m);
    const ts = await run(process.execPath, ['node_modules/.bin/sandgym', 'envs', '--env-module', './my-env.ts'], { cwd: user, timeout: 60_000 }).then(
      () => null,
      (e: { code: number; stderr: string }) => e,
    );
    expect(ts?.code).toBe(3);
    expect(ts?.stderr).toMatch(
      /^sandgym envs: env module \.\/my-env\.ts: cannot import: it is TypeScript and loading TypeScript needs the optional package tsx: `npm install tsx`/,
    );
    expect(ts?.stderr.trim().split('\n')).toHaveLength(1);
  });

  it.skipIf(NO_BROWSER !== null)(`the packed browser build runs an episode in Chromium${NO_BROWSER ? ` (skipped: ${NO_BROWSER})` : ''}`, async () => {
    expect(url, 'the server of the previous test').not.toBe('');
    const bundle = readFileSync(join(user, 'node_modules/sandgym/clients/ts/dist/browser.js'), 'utf8');
    const profile = mkdtempSync(join(work, 'chromium-'));
    const context = await chromium.launchPersistentContext(profile, {
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
    try {
      const page = context.pages()[0] ?? (await context.newPage());
      const errors: string[] = [];
      page.on('pageerror', (e) => errors.push(e.message));
      // A string, not a function: vitest would rewrite a dynamic import() inside a function body.
      const out = await page.evaluate(`(async () => {
        const mod = await import('data:text/javascript;base64,' + btoa(unescape(encodeURIComponent(${JSON.stringify(bundle)}))));
        const client = await mod.connect(${JSON.stringify(url)}, { encoding: 'msgpack' });
        const env = await client.make('wordle-v0');
        await env.reset({ seed: 7 });
        const r = await env.step('crane');
        await env.close();
        await client.close();
        return { observation: r.observation, components: Object.keys(r.info.reward_components).sort() };
      })()`);
      expect(errors).toEqual([]);
      expect(out).toEqual({ observation: expect.stringMatching(/^crane -> /), components: ['information', 'invalid_guess', 'solve'] });
    } finally {
      await context.close();
    }
  });

  it('imports sandgym, sandgym/protocol and sandgym/envs', async () => {
    const script = `
      const root = await import('sandgym');
      const protocol = await import('sandgym/protocol');
      const envs = await import('sandgym/envs');
      const ids = envs.builtinEnvs.map((d) => d.id);
      console.log(JSON.stringify({ buildApp: typeof root.buildApp, version: protocol.PROTOCOL_VERSION, ids }));
    `;
    const r = await run(process.execPath, ['--input-type=module', '-e', script], { cwd: user, timeout: 60_000 });
    const v = JSON.parse(r.stdout) as { buildApp: string; version: number; ids: string[] };
    expect(v.buildApp).toBe('function');
    expect(v.version).toBeGreaterThanOrEqual(2);
    expect(v.ids).toEqual(expect.arrayContaining(['math-v0', 'wordle-v0']));
  });
});
