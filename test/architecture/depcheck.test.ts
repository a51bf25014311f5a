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
    'server/src/session/session.ts': 'export class Session {}\n',
    'server/src/sandbox/types.ts': "export type { Limits } from '../../../sandbox-contract/index.js';\n",
    'server/src/env-host/sandbox-adapter.ts': "import type { Limits } from '../sandbox/types.js';\nexport const seam = (l?: Limits) => [l];\n",
    'server/src/session/deadline.ts': 'export const deadline = 1;\n',
    'server/src/transport/resume.ts': 'export interface Resumable { expire(): void }\n',
    'server/src/server-core.ts':
      "import type { Session } from './session/session.js';\nimport type { Resumable } from './transport/resume.js';\nexport interface ConnectionHandle { s?: Session; r?: Resumable }\n",
    'server/src/connection/connection.ts':
      "import type { ConnectionHandle } from '../server-core.js';\nimport { Session } from '../session/session.js';\nimport { seam } from '../env-host/sandbox-adapter.js';\nexport const c = (h: ConnectionHandle) => [h, Session, seam];\n",
    'server/src/admission/session-admission.ts': "import { deadline } from '../session/deadline.js';\nexport const a = deadline;\n",
    'server/src/trajectory/trajectory.ts': 'export const t = 1;\n',
    'server/src/play/session.ts': "import { t } from '../trajectory/trajectory.js';\nexport const p = t;\n",
    'server/src/cli/play.ts': "import { p } from '../play/session.js';\nimport { c } from '../connection/connection.js';\nexport const cli = [p, c];\n",
    'server/src/observability/metrics.ts': "import type { ConnectionHandle } from '../server-core.js';\nexport type M = ConnectionHandle;\n",
    'envs/src/api.ts':
      "import type { Wire } from '../../protocol/src/index.js';\nimport type { Limits } from '../../sandbox-contract/index.js';\nexport type Env = [Wire, Limits];\n",
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
      'server/src/sandbox/bad-driver.ts':
        "import type { Session } from '../session/session.js';\nimport type { Env } from '../../../envs/src/api.js';\nexport type X = [Session, Env];\n",
      // envs reaching the server through a literal dynamic import, and through a `typeof import()` type.
      'envs/src/bad-env.ts':
        "export async function f() { return (await import('../../server/src/env-host/sandbox-adapter.js')).seam; }\nexport type T = typeof import('../../server/src/sandbox/types.js');\n",
      'protocol/src/bad.ts': "import type { Env } from '../../envs/src/api.js';\nexport type Y = Env;\n",
      'clients/ts/src/bad.ts': "export { seam } from '../../../server/src/env-host/sandbox-adapter.js';\n",
      'sandbox-contract/bad.ts': "import type { Session } from '../server/src/session/session.js';\nexport type Z = Session;\n",
      // The scheduler core reaching into the sandbox layer (it must stay sans-I/O).
      'server/src/admission/scheduler/bad-core.ts': "import type { Limits } from '../../sandbox/types.js';\nexport type S = Limits;\n",
      'envs/src/typo.ts': "export const g = () => import('./no-such-module.js');\n",
      // Product code using a devDependency (absent from a production install).
      'server/src/uses-dev.ts': "import devOnly from 'dev-only';\nexport const d = devOnly;\n",
    });
    const r = await depcruise(root);
    expect(r.code).not.toBe(0);
    const lines = r.out.split('\n').filter((l) => l.includes('error '));
    const expected = [
      'sandbox-drivers-know-no-envs-or-sessions: server/src/sandbox/bad-driver.ts → server/src/session/session.ts',
      'sandbox-drivers-know-no-envs-or-sessions: server/src/sandbox/bad-driver.ts → envs/src/api.ts',
      'envs-only-protocol-and-sandbox-contract: envs/src/bad-env.ts → server/src/env-host/sandbox-adapter.ts',
      'envs-only-protocol-and-sandbox-contract: envs/src/bad-env.ts → server/src/sandbox/types.ts',
      'protocol-imports-nothing-of-ours: protocol/src/bad.ts → envs/src/api.ts',
      'clients-ts-only-protocol: clients/ts/src/bad.ts → server/src/env-host/sandbox-adapter.ts',
      'sandbox-contract-only-protocol: sandbox-contract/bad.ts → server/src/session/session.ts',
      'scheduler-core-is-sans-io: server/src/admission/scheduler/bad-core.ts → server/src/sandbox/types.ts',
      'no-unresolvable-import: envs/src/typo.ts → ./no-such-module.js',
      'no-unlisted-package: server/src/uses-dev.ts → node_modules/dev-only/index.js',
    ];
    for (const e of expected)
      expect(
        lines.some((l) => l.includes(e)),
        `missing: ${e}\n${r.out}`,
      ).toBe(true);
    // Nothing else: the allowed edges (seam -> session, envs -> contract, ...) are not reported.
    expect(lines, r.out).toHaveLength(expected.length);
  });

  it('fails on every import against the server/src folder directions, type-only ones included', async () => {
    const root = tree({
      // The core reaching its connections (the old connection ⇄ server-core ⇄ session circle, type-only).
      'server/src/server-core-bad.ts': 'export {};\n',
      'server/src/session/bad-session.ts':
        "import type { ConnectionHandle } from '../server-core.js';\nimport type { c } from '../connection/connection.js';\nexport type B = [ConnectionHandle, typeof c];\n",
      'server/src/admission/bad-admission.ts': "import type { Session } from '../session/session.js';\nexport type A = Session;\n",
      'server/src/env-host/bad-host.ts': "import type { Session } from '../session/session.js';\nexport type H = Session;\n",
      'server/src/transport/bad-transport.ts': "import type { Session } from '../session/session.js';\nexport type T = Session;\n",
      'server/src/observability/bad-observer.ts': "import type { Session } from '../session/session.js';\nexport type O = Session;\n",
      'server/src/connection/bad-connection.ts': "import { p } from '../play/session.js';\nexport const b = p;\n",
      'server/src/play/bad-play.ts': "import { cli } from '../cli/play.js';\nexport const b = cli;\n",
      'server/src/trajectory/bad-trajectory.ts': "import { p } from '../play/session.js';\nexport const b = p;\n",
    });
    // server-core.ts itself, replaced by one that imports a connection.
    writeFileSync(
      join(root, 'server/src/server-core.ts'),
      "import type { c } from './connection/connection.js';\nexport interface ConnectionHandle { c?: typeof c }\n",
    );
    const r = await depcruise(root);
    expect(r.code).not.toBe(0);
    const lines = r.out.split('\n').filter((l) => l.includes('error '));
    const expected = [
      'core-knows-no-connection: server/src/server-core.ts → server/src/connection/connection.ts',
      'session-knows-no-connection: server/src/session/bad-session.ts → server/src/server-core.ts',
      'session-knows-no-connection: server/src/session/bad-session.ts → server/src/connection/connection.ts',
      'admission-below-sessions: server/src/admission/bad-admission.ts → server/src/session/session.ts',
      'env-host-below-sessions: server/src/env-host/bad-host.ts → server/src/session/session.ts',
      'transport-knows-only-bytes: server/src/transport/bad-transport.ts → server/src/session/session.ts',
      'observability-only-listens: server/src/observability/bad-observer.ts → server/src/session/session.ts',
      'connection-knows-no-front: server/src/connection/bad-connection.ts → server/src/play/session.ts',
      'nothing-imports-the-cli: server/src/play/bad-play.ts → server/src/cli/play.ts',
      'trajectory-is-neutral: server/src/trajectory/bad-trajectory.ts → server/src/play/session.ts',
    ];
    for (const e of expected)
      expect(
        lines.some((l) => l.includes(e)),
        `missing: ${e}\n${r.out}`,
      ).toBe(true);
    // The one circle these make (server-core.ts -> connection -> server-core.ts) is reported too.
    expect(lines.filter((l) => l.includes('no-circular')).length, r.out).toBeGreaterThan(0);
  });

  it('fails on a circle of runtime imports and on a circle of type-only imports, anywhere', async () => {
    const root = tree({
      'clients/ts/src/a.ts': "import { b } from './b.js';\nexport const a = () => b;\n",
      'clients/ts/src/b.ts': "import { a } from './a.js';\nexport const b = () => a;\n",
      'envs/src/x.ts': "import type { Y } from './y.js';\nexport interface X { y?: Y }\n",
      'envs/src/y.ts': "import type { X } from './x.js';\nexport interface Y { x?: X }\n",
      // A literal import() closes a circle too (the archive store ⇄ s3-store one was of that kind).
      'server/src/observability/store.ts': "export const open = async () => (await import('./s3.js')).s3;\n",
      'server/src/observability/s3.ts': "import { open } from './store.js';\nexport const s3 = open;\n",
    });
    const r = await depcruise(root);
    expect(r.code).not.toBe(0);
    const circles = r.out.split('\n').filter((l) => l.includes('error no-circular'));
    // Each circle is reported (from one of its modules).
    for (const pair of [
      ['clients/ts/src/a.ts', 'clients/ts/src/b.ts'],
      ['envs/src/x.ts', 'envs/src/y.ts'],
      ['server/src/observability/store.ts', 'server/src/observability/s3.ts'],
    ]) {
      expect(
        circles.some((l) => pair.some((m) => l.includes(`no-circular: ${m}`))),
        `missing circle ${pair.join(' ⇄ ')}\n${r.out}`,
      ).toBe(true);
    }
    expect(
      r.out.split('\n').filter((l) => l.includes('error ') && !l.includes('no-circular')),
      r.out,
    ).toEqual([]);
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
