// Issue 32 items 2 and 4 through the CLI's main (the server's sandbox provider injected), on real Docker:
// `sandgym tasks import swe-bench` of the fixture instances, then `sandgym tasks validate` over a valid task and two
// doctored copies that must FAIL with the right problem: a copy of the fixed code reachable in the agent's sandbox
// (inside a dependency wheel of its environment image: found by content, not by name) and a FAIL_TO_PASS test that
// already passes on the base state. The degenerate battery runs on all of them (on by default): the imported task pays
// none of its degenerate submissions, and a fourth task (envs/test/fixtures/repo-degenerate/ages-raise-pays, whose
// FAIL_TO_PASS test only checks that ValueError is raised) must FAIL naming "raise ValueError in every function".
// Verdicts are cached in the default degenerate cache, as CI's shipped-set run does: a rerun is cheap (the leak task's
// image is built per run, so its verdicts are graded again). Skipped with the reason
// without Docker, a failure under SANDGYM_REQUIRE_DOCKER=1 (CI).
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ensureRepoEnvImage } from '../../server/src/cli/repo-env-build.js';
import { main } from '../../server/src/cli/run.js';
import { dockerFacility, gate } from '../../server/test/sandbox/facilities.js';
import { REPO_ROOT } from '../helpers/server.js';

const HAS_DOCKER = gate('docker', await dockerFacility('sandgym/python:1'));
const FIXTURES = path.join(REPO_ROOT, 'envs/test/fixtures/repo');
const SUBSECOND = 'pypi__parse-1.20.0-to-1.20.1-subsecond';
const HYPHEN = 'pypi__parse-1.20.1-to-1.20.2-hyphen';
const PAYS = 'ages-raise-pays';

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { io: { out: (s: string) => void out.push(s), err: (s: string) => void err.push(s) }, out, err };
}

describe.skipIf(!HAS_DOCKER)('tasks import swe-bench + tasks validate for repository tasks (docker)', () => {
  let dir: string;
  let leakImage: string | undefined;
  afterAll(async () => {
    if (leakImage) execFileSync('sh', ['-c', 'docker rmi -f "$1" >/dev/null 2>&1; true', 'rmi', leakImage]);
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('validates the imported task and fails the doctored ones with the right problem', async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'sandgym-repo-validate-'));
    const imported = path.join(dir, 'imported');
    const c0 = capture();
    expect(
      await main(['tasks', 'import', 'swe-bench', path.join(FIXTURES, 'parse-instances.jsonl'), '--repo-source', FIXTURES, '--out', imported, '--json'], c0.io),
    ).toBe(0);
    expect((JSON.parse(c0.out.join('')) as { tasks: { id: string }[] }).tasks.map((t) => t.id)).toEqual([SUBSECOND, HYPHEN]);
    const set = path.join(dir, 'set');
    // 1. as imported; 2. a backup of the FIXED parse.py under an innocent name in the base tree; 3. a PASS_TO_PASS test
    // moved into FAIL_TO_PASS (it passes on the base state: the task would pay for nothing).
    await cp(path.join(imported, SUBSECOND), path.join(set, SUBSECOND), { recursive: true });
    // The leak: a dependency wheel of the environment recipe that carries a copy of the FIXED parse.py (what a
    // site-packages copy of the newer release would be). Its image is built here from an index served in-process
    // (no network), so `validate` finds it built; the reference still scores 1 in it.
    const leak = 'leaky-copy';
    await cp(path.join(imported, SUBSECOND), path.join(set, leak), { recursive: true });
    const fixed = await readFile(path.join(set, leak, 'solution', 'parse.py'));
    const whl = path.join(dir, `sgleak${process.pid}-1.0-py3-none-any.whl`);
    execFileSync(
      'python3',
      [
        '-c',
        'import sys,zipfile\nz=zipfile.ZipFile(sys.argv[1],"w")\nz.writestr(sys.argv[2]+"/parse_fixed.py", sys.stdin.read())\nz.close()',
        whl,
        `sgleak${process.pid}`,
      ],
      {
        input: fixed,
      },
    );
    const wheel = new Uint8Array(await readFile(whl));
    const sha = createHash('sha256').update(wheel).digest('hex');
    const name = `sgleak${process.pid}`;
    const leakJson = JSON.parse(await readFile(path.join(set, leak, 'task.json'), 'utf8'));
    leakJson.environment.requirements = [`${name}==1.0 --hash=sha256:${sha}`];
    await writeFile(path.join(set, leak, 'task.json'), JSON.stringify({ ...leakJson, id: leak }));
    const index: typeof fetch = async (input) => {
      const url = String(input);
      if (url.endsWith(`/pypi/${name}/json`))
        return new Response(
          JSON.stringify({
            releases: { '1.0': [{ filename: path.basename(whl), url: `https://index.test/f/${path.basename(whl)}`, digests: { sha256: sha } }] },
          }),
        );
      if (url.endsWith(path.basename(whl))) return new Response(Buffer.from(wheel));
      return new Response('', { status: 404 });
    };
    leakImage = (await ensureRepoEnvImage(leakJson.environment, { index: 'https://index.test', fetch: index })).image;
    const easy = 'f2p-passes-on-base';
    await cp(path.join(imported, HYPHEN), path.join(set, easy), { recursive: true });
    const easyJson = JSON.parse(await readFile(path.join(set, easy, 'task.json'), 'utf8'));
    const moved = easyJson.tests.pass_to_pass.shift();
    easyJson.tests.fail_to_pass.push(moved);
    await writeFile(path.join(set, easy, 'task.json'), JSON.stringify({ ...easyJson, id: easy }));
    await cp(path.join(REPO_ROOT, 'envs/test/fixtures/repo-degenerate', PAYS), path.join(set, PAYS), { recursive: true });

    const c = capture();
    const t0 = performance.now();
    const code = await main(['tasks', 'validate', set, '--driver', 'docker', '--concurrency', '3', '--json'], c.io);
    const ms = performance.now() - t0;
    const doc = JSON.parse(c.out.join('')) as {
      ok: boolean;
      results: {
        id: string;
        ok: boolean;
        problems: string[];
        reference?: { score: number };
        null?: { score: number };
        repo_checks?: { flaky: string[]; leaks: string[] };
        degenerate?: {
          ok: boolean;
          limit: number;
          max: { id: string; name: string; score: number } | null;
          variants: { id: string; name: string; score: number; pays: boolean }[];
        };
      }[];
      summary: { degenerate?: { tasks: number; variants: number; paying: { id: string }[] } };
    };
    expect(code, c.err.join('')).toBe(1);
    const by = new Map(doc.results.map((r) => [r.id, r]));
    const ok = by.get(SUBSECOND);
    expect(ok?.problems).toEqual([]);
    expect(ok).toMatchObject({ ok: true, reference: { score: 1 }, null: { score: 0 }, repo_checks: { flaky: [], leaks: [] } });
    expect(by.get(leak)?.ok).toBe(false);
    expect(by.get(leak)?.reference?.score).toBe(1);
    expect(by.get(leak)?.repo_checks?.leaks).toEqual([`/opt/sandgym/site/sgleak${process.pid}/parse_fixed.py`]);
    expect(by.get(leak)?.problems.join('\n')).toMatch(/copy of the fixed code is readable in the agent sandbox: \/opt\/sandgym\/site\/sgleak/);
    expect(by.get(easy)?.ok).toBe(false);
    expect(by.get(easy)?.problems.join('\n')).toContain(`FAIL_TO_PASS tests pass on the untouched base: ${moved}`);
    // The battery: the imported task's degenerate submissions (the Python shapes over parse.py, its emptied and deleted
    // files, the empty workspace) all score 0, the untouched base's score.
    const deg = ok?.degenerate;
    expect(deg?.ok).toBe(true);
    expect(deg?.limit).toBeCloseTo(0.05, 9);
    expect(deg?.variants.map((v) => v.id)).toEqual(
      expect.arrayContaining(['raise:Exception', 'return:None', 'first-arg', 'empty-files', 'deleted-files', 'deleted']),
    );
    expect(deg?.variants.filter((v) => v.score !== 0)).toEqual([]);
    // The task whose FAIL_TO_PASS test pays "always raise ValueError": the reference and the base are right (1 and 0),
    // and validation fails naming the variant, and only that one.
    const pays = by.get(PAYS);
    expect(pays).toMatchObject({ ok: false, reference: { score: 1 }, null: { score: 0 } });
    expect(pays?.degenerate?.variants.filter((v) => v.pays).map((v) => v.id)).toEqual(['raise:ValueError']);
    expect(pays?.degenerate?.max).toEqual({ id: 'raise:ValueError', name: 'raise ValueError in every function', score: 1 });
    expect(pays?.problems).toEqual([
      'degenerate submission paid: raise ValueError in every function: 1.00 > untouched 0.00 + 0.05 (a submission that does no work must not earn more than the untouched workspace)',
    ]);
    expect(doc.summary.degenerate?.tasks).toBe(4);
    expect(doc.summary.degenerate?.paying.map((p) => p.id)).toEqual([PAYS]);
    // 4 tasks x 4 gradings and 2 agent sandboxes each, and 13-14 degenerate gradings each (cold), 3 at a time.
    expect(ms).toBeLessThan(150_000);
  }, 240_000);
});
