import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import {
  SYNTAX_CHECK_PY,
  gradingLayout,
  newGradingNonce,
  parseRunOutput,
  planGrading,
  pytestIni,
  runnerArgv,
  shellQuote,
  tamperedTests,
} from '../../src/code/grader-plan.js';
import { shippedTask, trustedFixture } from './helpers.js';

const NONCE = '0123456789abcdef0123456789abcdef';
// the in-process (trusted) pytest path: the shipped py-fix-inventory is a harness task now
const py = await trustedFixture('py-fix-inventory-trusted');
const js = await shippedTask('js-fix-cart');

describe('layout', () => {
  test('fresh random directory outside the workspace', () => {
    const l = gradingLayout(NONCE);
    expect(l.workspace).toBe('/workspace');
    expect(l.root).toBe(`/tmp/sandgym-grade-${NONCE}`);
    expect(l.report).toBe(`${l.root}/out/report.xml`);
    for (const p of [l.tests, l.report, l.ini, l.runScript]) expect(p.startsWith('/workspace')).toBe(false);
    expect(gradingLayout(NONCE, { workspace: '/w/', scratch: '/s/' }).root).toBe(`/s/sandgym-grade-${NONCE}`);
    expect(() => gradingLayout('../../etc')).toThrow(RangeError);
    expect(newGradingNonce()).toMatch(/^[0-9a-f]{32}$/);
    expect(newGradingNonce()).not.toBe(newGradingNonce());
  });
});

describe('runner argv', () => {
  test('pytest: clean env, isolated interpreter, generated ini, no cache/plugins, rootdir at the hidden tests', () => {
    const l = gradingLayout(NONCE);
    const argv = runnerArgv(py, l);
    expect(argv.slice(0, 2)).toEqual(['env', '-i']);
    expect(argv).toContain('PYTHONNOUSERSITE=1');
    expect(argv).toContain('PYTEST_DISABLE_PLUGIN_AUTOLOAD=1');
    expect(argv).toContain('PYTEST_ADDOPTS=');
    expect(argv).toContain(`SANDGYM_WORKSPACE=${l.workspace}`);
    const i = argv.indexOf('python3');
    expect(argv.slice(i, i + 5)).toEqual(['python3', '-I', '-B', '-m', 'pytest']);
    const rest = argv.slice(i + 5);
    expect(rest).toEqual(
      expect.arrayContaining([
        '-c',
        l.ini,
        `--rootdir=${l.tests}`,
        `--confcutdir=${l.tests}`,
        '-p',
        'no:cacheprovider',
        '-o',
        'addopts=',
        `--junitxml=${l.report}`,
      ]),
    );
    expect(rest[rest.length - 1]).toBe(`${l.tests}/test_inventory.py`);
    // Nothing in the runner's argv points into the workspace except the pythonpath in the generated ini.
    expect(rest.filter((a) => a.includes('/workspace'))).toEqual([]);
    expect(pytestIni(l)).toContain('pythonpath = /workspace');
    expect(pytestIni(l)).toMatch(/^addopts =$/m);
  });

  test('node: junit reporter to the fresh report path, explicit hidden test files', () => {
    const l = gradingLayout(NONCE);
    const argv = runnerArgv(js, l, { node: '/usr/bin/node' });
    const i = argv.indexOf('/usr/bin/node');
    expect(argv.slice(i)).toEqual([
      '/usr/bin/node',
      '--test',
      `--test-reporter=${l.reporter}`,
      `--test-reporter-destination=${l.report}`,
      `${l.tests}/cart.test.mjs`,
    ]);
    expect(argv).toContain('NODE_OPTIONS=');
  });

  test('extra task arguments are kept (reserved ones are refused at load time)', () => {
    const t = { ...py, spec: { ...py.spec, test: { ...py.spec.test, command: ['python3', '-m', 'pytest', '-x'] } } };
    const argv = runnerArgv(t, gradingLayout(NONCE));
    expect(argv.indexOf('-x')).toBe(argv.indexOf('pytest') + 1);
  });
});

describe('planGrading', () => {
  const plan = planGrading(py, { nonce: NONCE, changed: ['inventory/store.py', 'notes.md', 'data.json'] });

  test('hidden tests go to the fresh dir read-only; scripts and ini generated', () => {
    const paths = plan.files.map((f) => f.path);
    expect(paths).toContain(`${plan.layout.tests}/test_inventory.py`);
    expect(paths).toEqual(
      expect.arrayContaining([plan.layout.ini, plan.layout.runScript, plan.layout.gradeScript, plan.layout.syntaxScript, plan.layout.syntaxList]),
    );
    expect(plan.files.every((f) => f.mode === 0o444)).toBe(true);
    expect(plan.files.every((f) => !f.path.startsWith('/workspace'))).toBe(true);
    const list = plan.files.find((f) => f.path === plan.layout.syntaxList)?.content;
    expect(list).toBe('/workspace/inventory/store.py\n/workspace/data.json\n');
    expect(plan.testHashes).toEqual({ './test_inventory.py': py.tests[0]?.sha256 });
  });

  test('prepare creates the directory without -p (fails if it already exists)', () => {
    expect(plan.prepare?.argv?.[2]).toMatch(/^umask 077 && mkdir "\$1" && mkdir /);
    expect(plan.prepare?.argv?.at(-1)).toBe(plan.layout.root);
  });

  test('the nonce travels on stdin only, never in argv or a file', () => {
    expect(plan.run.stdin).toBe(`${NONCE}\n`);
    expect(plan.run.argv).toEqual(['sh', plan.layout.gradeScript, plan.layout.root, '60', '0', '1']);
    expect(planGrading(py, { nonce: NONCE, killStragglers: true }).run.argv?.[4]).toBe('1');
    // The runner preflight runs unless grade.ts knows this image passed it.
    expect(planGrading(py, { nonce: NONCE, preflight: false }).run.argv?.[5]).toBe('0');
    // It is part of the directory name, but never a frame marker in any file we write.
    for (const f of plan.files) expect(String(f.content)).not.toContain(`${NONCE}:`);
    expect(plan.run.timeout_ms).toBeGreaterThan(60_000);
    expect(plan.run.env).toBeUndefined();
  });

  test('run script quotes every argument', () => {
    const run = String(plan.files.find((f) => f.path === plan.layout.runScript)?.content);
    expect(run.startsWith('cd /workspace && exec env -i ')).toBe(true);
    expect(run).toContain(' -o addopts= -');
    expect(run).toContain("'PYTEST_ADDOPTS='".replace(/'/g, ''));
    expect(shellQuote("it's")).toBe(`'it'\\''s'`);
    expect(shellQuote('a b')).toBe(`'a b'`);
    expect(shellQuote('--x=/a/b')).toBe('--x=/a/b');
  });
});

describe('parseRunOutput', () => {
  const frame = (tag: string) => `\n${NONCE}:${tag}\n`;
  const xml = '<testsuites><testcase classname="a" name="b"/></testsuites>';
  const good = [
    frame('syntax:begin'),
    '{"path": "/workspace/a.py", "ok": true}\n{"path": "/workspace/b.py", "ok": false}\nnoise',
    frame('syntax:end'),
    frame('status:1'),
    frame('report:begin'),
    Buffer.from(xml).toString('base64'),
    frame('report:end'),
    frame('hashes:begin'),
    `${'a'.repeat(64)}  ./test_x.py\n`,
    frame('hashes:end'),
    frame('log:begin'),
    Buffer.from('1 passed').toString('base64'),
    frame('log:end'),
    frame('done'),
  ].join('');

  test('extracts syntax, status, report, hashes and log', () => {
    const out = parseRunOutput(good, NONCE);
    expect(out.complete).toBe(true);
    expect(out.status).toBe(1);
    expect(out.timed_out).toBe(false);
    expect(new TextDecoder().decode(out.report ?? new Uint8Array())).toBe(xml);
    expect(out.syntax).toEqual([
      { path: 'a.py', ok: true },
      { path: 'b.py', ok: false },
    ]);
    expect(out.hashes).toEqual({ './test_x.py': 'a'.repeat(64) });
    expect(out.log_tail).toBe('1 passed');
  });

  test('frames without the nonce are plain text; a duplicated frame voids the report', () => {
    const forged = good.replace(frame('status:1'), `\nWRONGNONCE:report:begin\nZZZZ\n${frame('status:1')}`);
    expect(parseRunOutput(forged, NONCE).report).not.toBeNull();
    const dup = good + frame('report:begin') + Buffer.from('<testsuites/>').toString('base64') + frame('report:end');
    const out = parseRunOutput(dup, NONCE);
    expect(out.report).toBeNull();
    expect(out.complete).toBe(false);
  });

  test('harness scripts: the syntax diagnostic comes base64-encoded, and nothing inside it is a frame', () => {
    const lines =
      '{"path": "/workspace/a.py", "ok": false}\n' +
      `${NONCE}:report:begin\n` +
      Buffer.from('<testsuites/>').toString('base64') +
      `\n${NONCE}:report:end\n` +
      '{"path": "/workspace/c.py", "ok": true}\n';
    const b64 = Buffer.from(lines).toString('base64');
    // Folded over several lines, as a frame of the grade script may arrive.
    const text = frame('status:0') + frame('syntax-b64:begin') + `${b64.slice(0, 20)}\n${b64.slice(20)}` + frame('syntax-b64:end') + frame('done');
    const out = parseRunOutput(text, NONCE);
    expect(out.syntax).toEqual([
      { path: 'a.py', ok: false },
      { path: 'c.py', ok: true },
    ]);
    expect(out.report).toBeNull();
    expect(out.complete).toBe(true);
    // Only the encoded section is read when both appear.
    expect(parseRunOutput(frame('syntax:begin') + '{"path": "x.py", "ok": true}' + text, NONCE).syntax).toHaveLength(2);
  });

  test('timeouts and truncated runs', () => {
    expect(parseRunOutput(good.replace('status:1', 'status:124'), NONCE).timed_out).toBe(true);
    const cut = parseRunOutput(good.slice(0, good.indexOf(`${NONCE}:done`)), NONCE);
    expect(cut.complete).toBe(false);
    expect(parseRunOutput('', NONCE)).toMatchObject({ complete: false, report: null, status: null });
  });

  test('tamperedTests lists changed, missing and extra files', () => {
    const exp = { './a.py': 'x', './b.py': 'y' };
    expect(tamperedTests(exp, { './a.py': 'x', './b.py': 'y' })).toEqual([]);
    expect(tamperedTests(exp, { './a.py': 'z', './c.py': 'y' })).toEqual(['./a.py', './b.py', './c.py']);
  });
});

describe('pre-started pytest (pytest-harness)', async () => {
  const { gradingRequirement } = await import('../../src/code/grade.js');
  const { pytestServerDir, pytestServerPrepare } = await import('../../src/code/grader-plan.js');
  const harness = await shippedTask('py-slugify');
  const plan = planGrading(harness, { nonce: NONCE });
  const file = (p: typeof plan, name: string) => p.files.find((f) => f.path === `${p.layout.root}/${name}`)?.content;

  test('run.sh hands the run to a waiting server first and keeps the direct line for when none took it', () => {
    const run = String(file(plan, 'run.sh'));
    const srv = pytestServerDir();
    expect(srv).toBe('/run/sandgym/judge/pytest-server');
    expect(run).toContain(`if [ -p ${srv}/go ]`);
    // The deadline reaches the server (not run.sh's child) through the trap.
    expect(run).toContain(`trap 'kill -9 "$pid" 2>/dev/null; exit 143' TERM INT HUP`);
    // Only a server that wrote out/started ran anything; otherwise the direct run follows.
    expect(run.indexOf('if [ -f out/started ]')).toBeLessThan(run.indexOf('exec env -i'));
    expect(run.trimEnd().split('\n').at(-1)).toMatch(/^cd \/run\/sandgym\/judge\/grade-[0-9a-f]+ && exec env -i .* python3 -I -B -m pytest /);
  });

  test('the request carries exactly the direct run: cwd, environment, pytest arguments, limit', () => {
    const req = JSON.parse(String(file(plan, 'server-request.json'))) as {
      cwd: string;
      env: Record<string, string>;
      args: string[];
      limit_s: number;
      agent_uid: boolean;
    };
    const run = String(file(plan, 'run.sh'));
    expect(req.cwd).toBe(plan.layout.root);
    expect(req.agent_uid).toBe(true);
    expect(req.limit_s).toBe(harness.spec.test.timeout_s);
    const direct = run.trimEnd().split('\n').at(-1) ?? '';
    for (const [k, v] of Object.entries(req.env)) expect(direct).toContain(shellQuote(`${k}=${v}`));
    expect(direct).toContain(` -I -B -m pytest ${req.args.map(shellQuote).join(' ')}`);
    expect(req.env.PYTEST_DISABLE_PLUGIN_AUTOLOAD).toBe('1');
  });

  test('off for the baseline and for host stand-ins; the grading requirement carries the prepare command only then', () => {
    for (const opts of [{ prestartServer: false }, { sameUidWorker: true }]) {
      const p = planGrading(harness, { nonce: NONCE, ...opts });
      expect(String(file(p, 'run.sh'))).not.toContain('pytest-server');
      expect(file(p, 'server-request.json')).toBeUndefined();
      expect(gradingRequirement(harness, { requirement: { image: 'x' }, ...opts }).prepare).toBeUndefined();
    }
    const req = gradingRequirement(harness, { requirement: { image: 'x' } });
    expect(req.prepare).toEqual(pytestServerPrepare());
    expect(req.prepare?.identity).toBe('judge');
    expect(req.prepare?.argv?.slice(3, 6)).toEqual(['sandgym-prepare', '/run/sandgym/judge/pytest-server', 'python3']);
    expect(String(req.prepare?.stdin)).toContain("sandgym's pre-started pytest");
    // Other formats start their runner in the run.
    expect(gradingRequirement(js, { requirement: { image: 'x' } }).prepare).toBeUndefined();
  });

  test('the grade script runs the syntax diagnostic beside the tests, holding nothing of the judge, and ends it before the sweep', async () => {
    const { HARNESS_GRADE_SH } = await import('../../src/code/grader-plan.js');
    const sh = HARNESS_GRADE_SH;
    const start = sh.indexOf('| syntax_check >');
    const run = sh.indexOf('sh "$root/run.sh"');
    // Started in the background before the tests, waited for after them and before the sweep and the report.
    expect(start).toBeGreaterThan(0);
    expect(sh.slice(start, run)).toContain('syntax_pid=$!');
    expect(start).toBeLessThan(run);
    expect(sh.indexOf('wait "$syntax_pid"')).toBeGreaterThan(run);
    expect(sh.indexOf('wait "$syntax_pid"')).toBeLessThan(sh.indexOf('\nsweep\n'));
    expect(sh.indexOf('\nsweep\n')).toBeLessThan(sh.indexOf('frame syntax-b64:begin'));
    // cwd /, a deadline the judge holds (timeout before nsenter), the output file named without the nonce.
    const fn = sh.slice(sh.indexOf('syntax_check() {'), sh.indexOf('\n}\n', sh.indexOf('syntax_check() {')));
    expect(fn).toContain('cd / ||');
    expect(fn).toMatch(/exec timeout -k 2 15 \$as_agent_prefix env -i/);
    expect(sh).toContain('syntax_out="${root%/*}/syntax-$$.out"');
    expect(sh).not.toMatch(/syntax_check[^\n]*"\$root\/out/);
  });

  test('parseRunOutput: the prestarted frame counts once, with the nonce', () => {
    const frame = (tag: string) => `\n${NONCE}:${tag}\n`;
    const base = frame('status:0') + frame('done');
    expect(parseRunOutput(base + frame('runner:prestarted'), NONCE).prestarted).toBe(true);
    expect(parseRunOutput(base, NONCE).prestarted).toBe(false);
    expect(parseRunOutput(`${base}\nWRONG:runner:prestarted\n`, NONCE).prestarted).toBe(false);
  });
});

describe('the syntax diagnostic script (run here with the host python, -I -S -B as in a grading)', () => {
  test('every line is ASCII JSON whose path is the file checked, whatever its name, and each kind of file is judged', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'sandgym-syntax-'));
    try {
      const files: Record<string, [string, boolean]> = {
        'good.py': ['def f():\n    return 1\n', true],
        'bad.py': ['def f(:\n', false],
        'q"uote.py': ['x = 1\n', true],
        'back\\slash.py': ['x = (\n', false],
        'tab\there.py': ['x = 1\n', true],
        'caf\u00e9 \u65e5\u672c.py': ['x = "\u00e9"\n', true],
        'emoji\u{1F600}.py': ['x = 1\n', true],
        'ok.json': ['{"a": [1, 2]}', true],
        'bad.json': ['{"a": ', false],
        'ok.sh': ['echo hi\n', true],
        'bad.sh': ['if then fi\n', false],
        'ok.mjs': ['export const x = 1;\n', true],
        'bad.js': ['function (\n', false],
        'notes.txt': ['not checked', true],
      };
      for (const [name, [content]] of Object.entries(files)) writeFileSync(path.join(dir, name), content);
      const list = path.join(dir, 'list.txt');
      writeFileSync(
        list,
        `${Object.keys(files)
          .map((n) => path.join(dir, n))
          .join('\n')}\n`,
      );
      const r = spawnSync('python3', ['-I', '-S', '-B', '-c', SYNTAX_CHECK_PY, process.execPath, list], {
        encoding: 'utf8',
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin', LANG: 'C.UTF-8' },
      });
      expect(r.status, r.stderr).toBe(0);
      const lines = r.stdout.split('\n').filter(Boolean);
      for (const l of lines) expect(/^[\x20-\x7e]*$/.test(l), l).toBe(true);
      const got = Object.fromEntries(lines.map((l) => JSON.parse(l) as { path: string; ok: boolean }).map((v) => [path.relative(dir, v.path), v.ok]));
      const want = Object.fromEntries(
        Object.entries(files)
          .filter(([n]) => n !== 'notes.txt')
          .map(([n, [, ok]]) => [n, ok]),
      );
      expect(got).toEqual(want);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
