// The dependency check (`npm run depcheck`, run by `npm test`) must fail on imports against the direction
// in docs/ARCHITECTURE.md. The real dependency-cruiser runs with the repo's own config on a scratch tree
// laid out like the repo: one file per rule that breaks it, plus files whose imports are all allowed.
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { ALLOWED, findInSource, scan } from '../../scripts/dynamic-imports.js';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const DEPCRUISE = join(REPO, 'node_modules/dependency-cruiser/bin/dependency-cruise.mjs');
const CONFIG = join(REPO, '.dependency-cruiser.cjs');
const ROOTS = ['protocol/src', 'sandbox-contract', 'envs/src', 'server/src', 'clients/ts/src'];

const scratch: string[] = [];
afterAll(() => {
  for (const d of scratch) rmSync(d, { recursive: true, force: true });
});

/** A scratch repo: tsconfig, package.json and the given files. */
function tree(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), 'sandgym-depcheck-'));
  scratch.push(root);
  const all: Record<string, string> = {
    'package.json': JSON.stringify({ name: 'fixture', type: 'module', dependencies: {}, devDependencies: { 'dev-only': '1.0.0' } }),
    'node_modules/dev-only/package.json': JSON.stringify({ name: 'dev-only', version: '1.0.0', main: 'index.js' }),
    'node_modules/dev-only/index.js': 'module.exports = 1;\n',
    'tsconfig.json': JSON.stringify({ compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext', strict: true } }),
    // The targets every fixture may import.
    'protocol/src/index.ts': 'export type Wire = { a: number };\n',
    'sandbox-contract/index.ts': "import type { Wire } from '../protocol/src/index.js';\nexport type Limits = Wire;\n",
    'server/src/session.ts': 'export class Session {}\n',
    'server/src/sandbox/types.ts': "export type { Limits } from '../../../sandbox-contract/index.js';\n",
    'server/src/sandbox-adapter.ts': "import { Session } from './session.js';\nimport type { Limits } from './sandbox/types.js';\nexport const seam = (s: Session, l?: Limits) => [s, l];\n",
    'envs/src/api.ts': "import type { Wire } from '../../protocol/src/index.js';\nimport type { Limits } from '../../sandbox-contract/index.js';\nexport type Env = [Wire, Limits];\n",
    'clients/ts/src/index.ts': "export type { Wire } from '../../../protocol/src/index.js';\n",
    ...files,
  };
  for (const [path, text] of Object.entries(all)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  return root;
}

function depcruise(cwd: string): Promise<{ code: number; out: string }> {
  return new Promise((done) => {
    execFile(process.execPath, [DEPCRUISE, '--config', CONFIG, '--output-type', 'err', ...ROOTS], { cwd }, (err, stdout, stderr) => {
      done({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, out: stdout + stderr });
    });
  });
}

describe('dependency direction (dependency-cruiser with .dependency-cruiser.cjs)', () => {
  it('passes a tree whose imports all follow the direction', async () => {
    const r = await depcruise(tree({}));
    expect(r.out).toContain('no dependency violations found');
    expect(r.code).toBe(0);
  });

  it('fails on every kind of import against the direction, dynamic and type-only ones included', async () => {
    const root = tree({
      // A driver reaching into sessions (type-only still counts) and into envs.
      'server/src/sandbox/bad-driver.ts': "import type { Session } from '../session.js';\nimport type { Env } from '../../../envs/src/api.js';\nexport type X = [Session, Env];\n",
      // envs reaching the server through a literal dynamic import, and through a `typeof import()` type.
      'envs/src/bad-env.ts':
        "export async function f() { return (await import('../../server/src/sandbox-adapter.js')).seam; }\nexport type T = typeof import('../../server/src/sandbox/types.js');\n",
      'protocol/src/bad.ts': "import type { Env } from '../../envs/src/api.js';\nexport type Y = Env;\n",
      'clients/ts/src/bad.ts': "export { seam } from '../../../server/src/sandbox-adapter.js';\n",
      'sandbox-contract/bad.ts': "import type { Session } from '../server/src/session.js';\nexport type Z = Session;\n",
      // The scheduler core reaching into the sandbox layer (it must stay sans-I/O).
      'server/src/scheduler/bad-core.ts': "import type { Limits } from '../sandbox/types.js';\nexport type S = Limits;\n",
      'envs/src/typo.ts': "export const g = () => import('./no-such-module.js');\n",
      // Product code using a devDependency (absent from a production install).
      'server/src/uses-dev.ts': "import devOnly from 'dev-only';\nexport const d = devOnly;\n",
    });
    const r = await depcruise(root);
    expect(r.code).not.toBe(0);
    const lines = r.out.split('\n').filter((l) => l.includes('error '));
    const expected = [
      'sandbox-drivers-know-no-envs-or-sessions: server/src/sandbox/bad-driver.ts → server/src/session.ts',
      'sandbox-drivers-know-no-envs-or-sessions: server/src/sandbox/bad-driver.ts → envs/src/api.ts',
      'envs-only-protocol-and-sandbox-contract: envs/src/bad-env.ts → server/src/sandbox-adapter.ts',
      'envs-only-protocol-and-sandbox-contract: envs/src/bad-env.ts → server/src/sandbox/types.ts',
      'protocol-imports-nothing-of-ours: protocol/src/bad.ts → envs/src/api.ts',
      'clients-ts-only-protocol: clients/ts/src/bad.ts → server/src/sandbox-adapter.ts',
      'sandbox-contract-only-protocol: sandbox-contract/bad.ts → server/src/session.ts',
      'scheduler-core-is-sans-io: server/src/scheduler/bad-core.ts → server/src/sandbox/types.ts',
      'no-unresolvable-import: envs/src/typo.ts → ./no-such-module.js',
      'no-unlisted-package: server/src/uses-dev.ts → node_modules/dev-only/index.js',
    ];
    for (const e of expected) expect(lines.some((l) => l.includes(e)), `missing: ${e}\n${r.out}`).toBe(true);
    // Nothing else: the allowed edges (seam -> session, envs -> contract, ...) are not reported.
    expect(lines, r.out).toHaveLength(expected.length);
  });
});

describe('non-literal dynamic imports (scripts/dynamic-imports.ts)', () => {
  it('finds import()/require() of a computed specifier and nothing else', () => {
    const src = [
      "const a = await import('./literal.js');",
      'const b = await import(`./template.js`);',
      "type T = typeof import('./type-only.js');",
      '// import(commented)',
      "const s = 'import(in a string)';",
      "const mod = '../../server/src/sandbox-adapter.js';",
      'const c = await import(mod);',
      'const d = await import(`./${name}.js`);',
      'const e = require(name);',
    ].join('\n');
    expect(findInSource('x.ts', src)).toEqual([
      { file: 'x.ts', line: 7, call: 'import', expr: 'mod' },
      { file: 'x.ts', line: 8, call: 'import', expr: '`./${name}.js`' },
      { file: 'x.ts', line: 9, call: 'require', expr: 'name' },
    ]);
  });

  it('product code has none outside the allow-list, and every allow-list entry is still needed', () => {
    const r = scan(REPO);
    expect(r.violations).toEqual([]);
    expect(r.stale).toEqual([]);
    expect(r.allowed.map((a) => a.file).sort()).toEqual(ALLOWED.map((a) => a.file).sort());
  });

  it('a violation in a scratch product tree is reported with file and line', () => {
    const root = tree({ 'envs/src/sneaky.ts': "const p = '../../server/src/sandbox-adapter.js';\nexport const m = () => import(p);\n" });
    const r = scan(root);
    expect(r.violations).toEqual([{ file: 'envs/src/sneaky.ts', line: 2, call: 'import', expr: 'p' }]);
    expect(r.stale).toHaveLength(ALLOWED.length); // the allow-listed files do not exist there
  });
});
