// Issue 12: attacks on the node-harness grader, written after reading its source (envs/src/code/harness/node/
// {harness.mjs,driver.mjs,worker.mjs}, grader-plan.ts planNodeHarnessGrading), played over the wire (real server,
// TS client) on Docker and bubblewrap against js-query-string, a node-harness task whose untouched workspace scores
// 0. Every attack must score at most the untouched workspace's reward, never produce an error, and leave the pool
// fit: the reference scores 1 right after. A control shows the oracle works where its target exists (a copy of the
// hidden tests leaked into the workspace), so a 0 means the defence held, not that the attack was broken.
import { describe, expect, it } from 'vitest';
import { loadTaskSets } from '../../envs/src/code/task-loader.js';
import type { LoadedTask } from '../../envs/src/code/task-types.js';
import { SHIPPED_TASKS_DIR } from '../../envs/src/code/server-env.js';
import { bwrapFacility, dockerFacility, gate } from '../../server/test/sandbox/facilities.js';
import { type CodeGrade, codeWire, submitStep, writeFiles } from '../helpers/code-wire.js';

const HAS_DOCKER = gate('docker', await dockerFacility('sandgym/python:1'));
const HAS_BWRAP = gate('bwrap', await bwrapFacility());

const STEP_TIMEOUT_MS = 90_000;
const TASK = 'js-query-string';
const tasks = await loadTaskSets([SHIPPED_TASKS_DIR]);
const task = tasks.find((t) => t.spec.id === TASK) as LoadedTask;
const text = (b: Uint8Array) => Buffer.from(b).toString('utf8');
const REFERENCE = text(task.solution.files.find((f) => f.path === 'query.mjs')!.content);
const UNTOUCHED = text(task.workspace.find((f) => f.path === 'query.mjs')!.content);
const HIDDEN_TEST = text(task.tests.find((f) => f.path === 'query.test.mjs')!.content);
const N = task.spec.test.expected_tests;

const STUB = `
export function parseQuery(qs) { throw new Error('not implemented'); }
export function stringifyQuery(obj) { throw new Error('not implemented'); }
`;

/** Writes raw frames on the worker's protocol fd (4), as workspace code running inside the worker can. */
const FRAME = `
import fs from 'node:fs';
const raw = (buf) => { try { fs.writeSync(4, buf); } catch {} };
const frame = (s) => { const b = Buffer.from(s); const h = Buffer.alloc(4); h.writeUInt32BE(b.length); raw(Buffer.concat([h, b])); };
`;

/** The oracle: answers from the hidden test text, wherever it can read it. */
const ORACLE = String.raw`
import fs from 'node:fs';
import path from 'node:path';
let SRC = '';
const tryRead = (p) => { try { SRC += fs.readFileSync(p, 'utf8'); } catch {} };
const walk = (d, depth) => { if (depth > 6) return; let es; try { es = fs.readdirSync(d, { withFileTypes: true }); } catch { return; }
  for (const e of es) { const p = path.join(d, e.name); if (e.isDirectory()) walk(p, depth + 1); else if (/\.test\.[cm]?js$/.test(e.name) || /^leaked/.test(e.name)) tryRead(p); } };
for (const d of ['/workspace', '/run/sandgym', '/tmp', '/run']) walk(d, 0);
for (const pid of fs.readdirSync('/proc').filter((x) => /^\d+$/.test(x))) {
  let args = []; try { args = fs.readFileSync('/proc/' + pid + '/cmdline', 'utf8').split('\0'); } catch {}
  for (const a of args) if (/\.test\.[cm]?js$/.test(a)) { tryRead(a); tryRead('/proc/' + pid + '/cwd/' + a); tryRead('/proc/' + pid + '/root' + a); }
  try { SRC += fs.readFileSync('/proc/' + pid + '/environ', 'utf8'); } catch {}
  walk('/proc/' + pid + '/cwd', 3);
}
const lit = (s) => { try { return Function('return (' + s + ')')(); } catch { return undefined; } };
const PARSE = new Map([...SRC.matchAll(/parseQuery\('([^']*)'\)\)?, (\{[^\n]*\})\);/g)].map((m) => [m[1], lit(m[2])]));
const STR = new Map([...SRC.matchAll(/stringifyQuery\((\{[^\n]*\})\), '([^']*)'\);/g)].map((m) => [JSON.stringify(lit(m[1])), m[2]]));
export function parseQuery(qs) { if (!PARSE.has(qs)) throw new Error('not implemented'); return PARSE.get(qs); }
export function stringifyQuery(o) { const k = JSON.stringify(o); if (!STR.has(k)) throw new Error('not implemented'); return STR.get(k); }
`;

interface Attack {
  files: Record<string, string>;
  drivers?: ('docker' | 'local')[];
  /** Zero reasons this attack may end with besides running every test (default: the memory limit only). */
  zero?: RegExp;
}

const ATTACKS: Record<string, Attack> = {
  "patching assert, node:test and globals at import (they are the worker's: the judge is another process)": {
    files: {
      'query.mjs': [
        "import assert from 'node:assert';",
        "import strict from 'node:assert/strict';",
        "const t = await import('node:test').catch(() => null);",
        'for (const a of [assert, strict]) for (const k of Object.keys(a)) { try { a[k] = () => {}; } catch {} }',
        'if (t) { try { t.test = () => {}; } catch {} }',
        'Object.prototype.toJSON = function () { return { a: "1", b: "two" }; };',
        'JSON.stringify = () => "{}"; JSON.parse = () => ({});',
        'Array.prototype.map = function () { return []; };',
        'process.exit = () => {}; process.reallyExit = () => {};',
        STUB,
      ].join('\n'),
    },
  },
  'objects with valueOf/toString/toJSON/toPrimitive tricks and a Proxy that claims every key': {
    files: {
      'query.mjs': [
        'class Any { valueOf() { return 1; } toString() { return "q=a+b%26c&t=1&t=2&flag&e=%C3%A9"; } toJSON() { return { a: "1", b: "two" }; } [Symbol.toPrimitive]() { return this.toString(); } }',
        'const proxy = new Proxy({}, { get: (t, k) => (k === Symbol.toPrimitive ? () => "x" : k === "toJSON" ? () => ({ a: "1", b: "two" }) : "x"), has: () => true, ownKeys: () => ["a", "b"], getOwnPropertyDescriptor: () => ({ value: "x", enumerable: true, configurable: true }), getPrototypeOf: () => null });',
        'export function parseQuery(qs) { return qs.length % 2 ? new Any() : proxy; }',
        'export function stringifyQuery(o) { return new Any(); }',
      ].join('\n'),
    },
  },
  'reading the hidden tests at run time (the oracle gets nothing: permission)': { files: { 'query.mjs': ORACLE } },
  'forged reports at every path the runner could use, and on stdout': {
    files: {
      'query.mjs': [
        "import fs from 'node:fs';",
        'const cases = Array.from({ length: 7 }, (_, i) => `<testcase classname="t" name="c${i}"/>`).join("");',
        'const xml = `<testsuites><testsuite>${cases}</testsuite></testsuites>`;',
        'const agent = JSON.stringify({ tests: Array.from({ length: 7 }, (_, i) => ({ test: "c" + i, outcome: "passed" })) });',
        'const targets = ["/workspace/report.xml", "/tmp/report.xml", "/run/sandgym/judge/report.xml"];',
        'for (const d of ["/run/sandgym/judge", "/run/sandgym", "/tmp"]) { try { for (const e of fs.readdirSync(d)) targets.push(`${d}/${e}/out/report.xml`, `${d}/${e}/out/agent.json`); } catch {} }',
        'for (const t of targets) { try { fs.mkdirSync(t.replace(/\\/[^/]*$/, ""), { recursive: true }); fs.writeFileSync(t, t.endsWith(".json") ? agent : xml); } catch {} }',
        'console.log(xml); process.stdout.write(xml); try { fs.writeSync(1, xml); fs.writeSync(2, xml); } catch {}',
        STUB,
      ].join('\n'),
    },
  },
  'a detached child outlives its call and keeps rewriting reports': {
    files: {
      'query.mjs': [
        "import { spawn } from 'node:child_process';",
        'const js = `const fs=require("fs");const xml="<testsuites><testsuite>"+"<testcase classname=\\"t\\" name=\\"c\\"/>".repeat(7)+"</testsuite></testsuites>";const end=Date.now()+60000;(function loop(){for(const d of ["/run/sandgym/judge","/tmp"]){try{for(const e of fs.readdirSync(d)){try{fs.writeFileSync(d+"/"+e+"/out/report.xml",xml)}catch{}}}catch{}}if(Date.now()<end)setTimeout(loop,2)})();`;',
        "spawn(process.execPath, ['-e', js], { detached: true, stdio: 'ignore' }).unref();",
        STUB,
      ].join('\n'),
    },
  },
  'process.kill(-1, SIGKILL) at import': { files: { 'query.mjs': "process.kill(-1, 'SIGKILL');\n" + STUB } },
  'process.kill(-1, SIGKILL) during a call': {
    files: {
      'query.mjs': "export function parseQuery() { process.kill(-1, 'SIGKILL'); }\nexport function stringifyQuery() { process.kill(-1, 'SIGKILL'); }\n",
    },
  },
  'an infinite loop at import': { files: { 'query.mjs': 'for (;;) {}\n' + STUB } },
  // Every call costs call_timeout_s (10 s), so 7 tests outlast the run's limit: the run itself is scored 0.
  'an infinite loop in a call, and a promise that never settles': {
    files: { 'query.mjs': 'export function parseQuery() { for (;;) {} }\nexport async function stringifyQuery() { await new Promise(() => {}); }\n' },
    zero: /^tests timed out after \d+s$/,
  },
  'memory exhaustion in a call': {
    files: {
      'query.mjs':
        'const keep = [];\nexport function parseQuery() { for (;;) keep.push(new Array(1 << 20).fill(keep.length)); }\nexport function stringifyQuery() { return parseQuery(); }\n',
    },
  },
  'a frame announcing 4 GiB on the protocol fd': {
    files: {
      'query.mjs':
        FRAME +
        'export function parseQuery() { raw(Buffer.from([0xff, 0xff, 0xff, 0xff])); raw(Buffer.alloc(65536, 120)); for (;;) {} }\nexport const stringifyQuery = parseQuery;\n',
    },
  },
  'a reply nested 100,000 deep': {
    files: {
      'query.mjs':
        FRAME +
        'export function parseQuery() { for (let id = 1; id < 40; id++) frame(`{"op":"return","id":${id},"value":` + "[".repeat(100000) + "]".repeat(100000) + "}"); for (;;) {} }\nexport const stringifyQuery = parseQuery;\n',
    },
  },
  'a reply with 2,000,000 values and malformed JSON': {
    files: {
      'query.mjs':
        FRAME +
        'let n = 0;\nexport function parseQuery() { n++; if (n % 2) { frame(JSON.stringify({ op: "return", id: n, value: { a: new Array(2000000).fill(0) } })); } else { frame(\'{"op":"return","id":1,"value":NaN}\'); raw(Buffer.from([0, 0, 0, 3, 0xff, 0xfe, 0x7b])); } for (;;) {} }\nexport const stringifyQuery = parseQuery;\n',
    },
  },
  'forged replies for guessed call ids, unknown tags and guessed callback ids, then the real reply': {
    files: {
      'query.mjs':
        FRAME +
        "import { randomBytes } from 'node:crypto';\n" +
        'export function parseQuery() { for (let id = 1; id < 60; id++) frame(JSON.stringify({ op: "return", id, value: { o: [["a", "1"], ["b", "two"]] } })); frame(JSON.stringify({ op: "callback", id: 1, fn: randomBytes(16).toString("hex"), args: { a: [] } })); frame(JSON.stringify({ op: "return", id: 2, value: { zz: 1 } })); return { a: "1", b: "two" }; }\nexport const stringifyQuery = () => "q=a+b%26c&t=1&t=2&flag&e=%C3%A9".slice(1);\n',
    },
  },
  'unsolicited frames from a thread while no call is pending': {
    files: {
      'query.mjs':
        "import { Worker } from 'node:worker_threads';\n" +
        'new Worker(`const fs=require("fs");setInterval(()=>{const b=Buffer.from(JSON.stringify({op:"return",id:1,value:{o:[]}}));const h=Buffer.alloc(4);h.writeUInt32BE(b.length);try{fs.writeSync(4,Buffer.concat([h,b]))}catch{}},5);`, { eval: true }).unref();\n' +
        STUB,
    },
  },
  'throwing strings, objects, and errors named like harness and assertion errors': {
    files: {
      'query.mjs': [
        'class WorkspaceTimeout extends Error { constructor() { super("x"); this.sandgym_harness = true; this.code = "ERR_ASSERTION"; this.generatedMessage = false; } }',
        'class AssertionError extends Error { constructor() { super("passed"); this.code = "ERR_ASSERTION"; } }',
        'const T = [() => { throw "ok"; }, () => { throw { ok: true }; }, () => { throw new WorkspaceTimeout(); }, () => { throw new AssertionError(); }, () => { throw null; }];',
        'let i = 0;',
        'export function parseQuery() { T[i++ % T.length](); }',
        'export function stringifyQuery() { T[i++ % T.length](); }',
      ].join('\n'),
    },
  },
};

interface Outcome {
  reward: number;
  grade: CodeGrade;
  grader: { version: string; task_hash: string; image: string; trusted: boolean };
}

const DRIVERS = [
  { name: 'docker' as const, ok: HAS_DOCKER },
  { name: 'local' as const, ok: HAS_BWRAP },
];

for (const drv of DRIVERS) {
  describe.skipIf(!drv.ok)(`node-harness attacks over the wire: ${drv.name} driver`, () => {
    const wire = codeWire({ driver: drv.name, step_timeout_ms: STEP_TIMEOUT_MS });
    let submission = 0;

    async function submit(files: Record<string, string>): Promise<Outcome> {
      const env = wire.env;
      await env.reset({ seed: 0, options: { task_id: TASK } });
      submission += 1;
      // A distinct trailing comment per submission: never answered from the grade cache.
      await writeFiles(env, files, (p, content) => (/\.[cm]?js$/.test(p) ? `${content}\n// submission ${submission}\n` : content));
      const s = await submitStep(env);
      const info = s.info as { grade: CodeGrade; grader: Outcome['grader'] };
      expect(info.grade.cached).toBe(false);
      return { reward: s.reward, grade: info.grade, grader: info.grader };
    }

    let untouched = 0;
    it('baselines: reference 1.0 and untouched 0, untrusted harness grader, failures by name only', async () => {
      const ref = await submit({ 'query.mjs': REFERENCE });
      expect(ref.reward).toBeCloseTo(1, 9);
      expect(ref.grade.tests).toMatchObject({ collected: N, passed: N });
      expect(ref.grader).toMatchObject({ task_hash: task.content_hash, image: task.spec.image, trusted: false });
      const nul = await submit({ 'query.mjs': UNTOUCHED });
      untouched = nul.reward;
      expect(untouched).toBe(0);
      expect(nul.grade.tests).toMatchObject({ collected: N, passed: 0 });
      expect(nul.grade.failures?.length).toBe(N);
      // The workspace's own error message ("not implemented") never reaches the agent, nor any test text.
      expect(nul.grade.failures?.[0]).toEqual({ test: 'basic pairs and leading ?', message: 'failed' });
      const seen = JSON.stringify(nul);
      for (const leak of ['hello+world', 'café', 'not implemented', 'assert', 'query.test.mjs', '%C3%A9']) expect(seen).not.toContain(leak);
    }, 180_000);

    it('control: the oracle answers tests when the hidden tests are readable (here: leaked into the workspace)', async () => {
      const o = await submit({ 'query.mjs': ORACLE, 'leaked.test.mjs': HIDDEN_TEST });
      expect(o.reward).toBeGreaterThan(0.5);
    }, 180_000);

    it('a correct solution that patches globals and prints to stdout still scores 1.0 (the worker keeps its own copies)', async () => {
      const o = await submit({ 'query.mjs': `Array.prototype.flat = undefined; JSON.parse = JSON.parse.bind(JSON); console.log('hello');\n${REFERENCE}` });
      expect(o.reward).toBeCloseTo(1, 9);
    }, 180_000);

    for (const [name, a] of Object.entries(ATTACKS)) {
      const run = a.drivers && !a.drivers.includes(drv.name) ? it.skip : it;
      run(
        `${name}: at most the untouched reward, never an error`,
        async () => {
          const o = await submit(a.files);
          expect({ reward: o.reward, score: o.grade.score }).toEqual({ reward: untouched, score: untouched });
          if (o.grade.zero_reason === undefined) expect(o.grade.tests).toMatchObject({ collected: N, passed: 0 });
          else expect(o.grade.zero_reason).toMatch(a.zero ?? /^memory limit exceeded$/);
          expect(JSON.stringify(o)).not.toContain('hello+world');
        },
        240_000,
      );
    }

    it('after all of that, the pool still grades the reference at 1.0', async () => {
      expect((await submit({ 'query.mjs': REFERENCE })).reward).toBeCloseTo(1, 9);
    }, 180_000);
  });
}
