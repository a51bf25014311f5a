// Issue 32 item 6: bring your own prebuilt image, with a REAL local registry (Debian's docker-registry, the
// distribution registry v2, on a loopback port with a temporary storage directory). Images are built FROM the local
// python toolchain image, pushed, and their local copies removed; a SWE-bench-format instance (the `parse` fixture)
// names one by digest. `sandgym tasks build-envs` (the real CLI once, else its code in-process) pulls it, checks it and derives the task's image; a
// real episode over the wire scores the reference 1 and the untouched base 0. Attacks: the fixed code in
// site-packages and a .git in the image (refused, naming the path), a poisoned pytest (the judge uses its own: the
// untouched base still scores 0, for the FAIL_TO_PASS reason), a poisoned sitecustomize, an executing .pth and an
// LD_PRELOAD in the image's configuration (refused, naming the path or variable), a registry serving a manifest that is not the pinned digest, a registry that is not
// there and a tag-only reference (clear errors, no endless retry). Gate: skipped with the reason without docker-registry
// or Docker, a failure under SANDGYM_REQUIRE_REGISTRY=1 (CI).
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadTaskSets } from '../../envs/src/code/task-loader.js';
import type { LoadedTask } from '../../envs/src/code/task-types.js';
import { importSweBench } from '../../envs/src/repo/swe-import.js';
import { environmentImage } from '../../envs/src/repo/repo-environment.js';
import { exitCodeFor } from '../../server/src/cli/exit-codes.js';
import { runTasks } from '../../server/src/cli/tasks.js';
import { runCli } from '../../server/test/helpers/cli.js';
import { gate, registryFacility } from '../../server/test/sandbox/facilities.js';
import { codeWire, expectZero, playRepo, referenceSteps } from '../helpers/code-wire.js';
import { REPO_ROOT } from '../helpers/server.js';

const REG = await registryFacility();
const HAS_REGISTRY = gate('registry', REG);
const FIXTURES = path.join(REPO_ROOT, 'envs/test/fixtures/repo');
const BASE_ID = 'pypi__parse-1.20.0-to-1.20.1-subsecond';
const NOTICE = /edits to tests, conftest\.py or test configuration are not graded/;
/** A registry host that does not exist: with the operator's registry configured, the pull goes there instead. */
const NAMED_ELSEWHERE = 'registry.sandgym.invalid';

function sh(cmd: string, args: string[], timeoutMs = 180_000): Promise<{ code: number; out: string; err: string }> {
  return new Promise((resolve) => {
    execFile(cmd, args, { timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 }, (e, out, err) =>
      resolve({ code: e ? Number((e as { code?: number }).code ?? 1) : 0, out: String(out), err: String(err) }),
    );
  });
}

async function must(cmd: string, args: string[]): Promise<string> {
  const r = await sh(cmd, args);
  if (r.code !== 0) throw new Error(`${cmd} ${args.join(' ')}: exit ${r.code}: ${r.err.slice(-800)}`);
  return r.out;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

/** Poisons the image's own pytest: every test function "passes" (its exception swallowed). */
const PYTEST_POISON = `
SANDGYM_POISON = "poisoned-pytest"


def pytest_pyfunc_call(pyfuncitem):
    try:
        pyfuncitem.obj(**{a: pyfuncitem.funcargs[a] for a in pyfuncitem._fixtureinfo.argnames})
    except BaseException:
        pass
    return True
`;
/** A start-up hook that makes every assertion pass (Debian's sitecustomize.py links to /etc/python3.11/sitecustomize.py). */
const SITE_POISON = 'import builtins\nbuiltins.SANDGYM_POISON = "sitecustomize"\n';

describe.skipIf(!HAS_REGISTRY)('bring your own prebuilt image: a real local registry', () => {
  let work: string;
  let registry: ChildProcess | undefined;
  let host: string;
  let fixed: string;
  const refs: Record<string, string> = {};
  const dirs: Record<string, string> = {};
  const tasks: Record<string, LoadedTask> = {};
  const pushed: string[] = [];
  const derived: string[] = [];

  /** Builds `dockerfile` (its context: `files`), pushes it as localhost:PORT/sandgym-test/NAME, removes the local copy. */
  async function pushImage(name: string, dockerfile: string, files: Record<string, string> = {}): Promise<string> {
    const ctx = path.join(work, `ctx-${name}`);
    await mkdir(ctx);
    await writeFile(path.join(ctx, 'Dockerfile'), dockerfile);
    for (const [f, c] of Object.entries(files)) await writeFile(path.join(ctx, f), c);
    const tag = `${host}/sandgym-test/${name}:push`;
    await must('docker', ['build', '--network', 'none', '-q', '-t', tag, ctx]);
    const out = await must('docker', ['push', tag]);
    const digest = /digest: (sha256:[0-9a-f]{64})/.exec(out)?.[1];
    if (!digest) throw new Error(`no digest in the output of docker push ${tag}: ${out}`);
    await must('docker', ['rmi', tag]);
    pushed.push(`${host}/sandgym-test/${name}@${digest}`);
    return digest;
  }

  /** Imports the fixture's first instance as `id`, naming `image` in its sandgym.environment. */
  async function importAs(key: string, id: string, image: string): Promise<void> {
    const line = (await readFile(path.join(FIXTURES, 'parse-instances.jsonl'), 'utf8')).split('\n')[0] as string;
    const inst = JSON.parse(line) as { instance_id: string; sandgym: { environment: unknown; timeout_s: number } };
    inst.instance_id = id;
    inst.sandgym.environment = { image, python_path: ['.'] };
    // The fixture's 10 s test limit is for a quiet machine; this suite runs beside others.
    inst.sandgym.timeout_s = 60;
    const file = path.join(work, `${key}.jsonl`);
    await writeFile(file, `${JSON.stringify(inst)}\n`);
    const out = path.join(work, `set-${key}`);
    await importSweBench({ file, repoSource: FIXTURES, out });
    dirs[key] = out;
    const t = (await loadTaskSets([out]))[0] as LoadedTask;
    tasks[key] = t;
    refs[key] = image;
    derived.push(t.spec.image);
    // A derived image left by an earlier run would skip the pull this test is about.
    await sh('docker', ['rmi', '-f', t.spec.image]);
  }

  beforeAll(async () => {
    work = await mkdtemp(path.join(os.tmpdir(), 'sandgym-prebuilt-'));
    const port = await freePort();
    host = `localhost:${port}`;
    await writeFile(
      path.join(work, 'registry.yml'),
      `version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: ${work}/registry\nhttp:\n  addr: 127.0.0.1:${port}\n`,
    );
    registry = spawn(REG.bin, ['serve', path.join(work, 'registry.yml')], { stdio: 'ignore' });
    for (let i = 0; ; i++) {
      const ok = await fetch(`http://127.0.0.1:${port}/v2/`).then(
        (r) => r.status === 200,
        () => false,
      );
      if (ok) break;
      if (i > 100) throw new Error(`the registry on ${host} did not answer in 10 s`);
      await new Promise((r) => setTimeout(r, 100));
    }
    // The fixed parse.py, for the image that leaks it: the reference fix of the task.
    const probe = path.join(work, 'probe');
    await importSweBench({ file: path.join(FIXTURES, 'parse-instances.jsonl'), repoSource: FIXTURES, out: probe });
    const base = (await loadTaskSets([probe])).find((t) => t.spec.id === BASE_ID) as LoadedTask;
    fixed = Buffer.from((base.solution.files.find((f) => f.path === 'parse.py') as { content: Uint8Array }).content).toString('utf8');

    const nonce = createHash('sha256').update(String(process.pid)).digest('hex').slice(0, 8);
    const from = `FROM sandgym/python:1\nLABEL sandgym.test=prebuilt-${nonce}\n`;
    // The first push uploads the base image's layers; the others then share them (pushed side by side).
    const good = await pushImage('good', from);
    const [poisoned, leak, git, site, pth, tampered, preload] = await Promise.all([
      pushImage(
        'poisoned',
        `${from}USER 0:0\nCOPY poison.py /tmp/poison.py\nRUN cat /tmp/poison.py >> /usr/lib/python3/dist-packages/_pytest/python.py && rm /tmp/poison.py\nUSER 65534:65534\n`,
        { 'poison.py': PYTEST_POISON },
      ),
      pushImage('leak', `${from}COPY parse.py /usr/local/lib/python3.11/dist-packages/parse.py\n`, { 'parse.py': fixed }),
      pushImage('git', `${from}COPY HEAD /srv/upstream/.git/HEAD\n`, { HEAD: 'ref: refs/heads/main\n' }),
      pushImage('site', `${from}USER 0:0\nCOPY sitecustomize.py /etc/python3.11/sitecustomize.py\nUSER 65534:65534\n`, {
        'sitecustomize.py': SITE_POISON,
      }),
      pushImage('pth', `${from}COPY zz.pth /usr/lib/python3/dist-packages/zz-sandgym.pth\n`, {
        'zz.pth': 'import builtins; builtins.SANDGYM_POISON = "pth"\n',
      }),
      pushImage('tampered', `${from}LABEL sandgym.test.tampered=1\n`),
      pushImage('preload', `${from}ENV LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libsandgym-poison.so\n`),
    ]);
    const digests = { good, poisoned, leak, git, site, pth, tampered, preload };
    // The tampered image's manifest, rewritten in the registry's storage (one byte, same length): the registry then
    // serves content whose digest is not the one the instance pins.
    const blob = path.join(work, 'registry/docker/registry/v2/blobs/sha256', digests.tampered.slice(7, 9), digests.tampered.slice(7), 'data');
    const manifest = await readFile(blob, 'utf8');
    const tamperedManifest = manifest.replace(/("size": )(\d*)(\d)/, (_m, a: string, b: string, c: string) => `${a}${b}${(Number(c) + 1) % 10}`);
    expect(tamperedManifest).not.toBe(manifest);
    await writeFile(blob, tamperedManifest);
    await importAs('good', 'prebuilt-good', `${host}/sandgym-test/good@${digests.good}`);
    // Named on a registry that does not exist: pulled through the operator's (SANDGYM_REPO_REGISTRY).
    await importAs('poisoned', 'prebuilt-poisoned-pytest', `${NAMED_ELSEWHERE}/sandgym-test/poisoned@${digests.poisoned}`);
    await importAs('leak', 'prebuilt-leak', `${host}/sandgym-test/leak@${digests.leak}`);
    await importAs('git', 'prebuilt-git', `${host}/sandgym-test/git@${digests.git}`);
    await importAs('site', 'prebuilt-site', `${host}/sandgym-test/site@${digests.site}`);
    await importAs('pth', 'prebuilt-pth', `${host}/sandgym-test/pth@${digests.pth}`);
    await importAs('preload', 'prebuilt-preload', `${host}/sandgym-test/preload@${digests.preload}`);
    await importAs('tampered', 'prebuilt-tampered', `${host}/sandgym-test/tampered@${digests.tampered}`);
    const unknown = createHash('sha256').update('no such image').digest('hex');
    await importAs('unknown', 'prebuilt-unknown-digest', `${host}/sandgym-test/good@sha256:${unknown}`);
    const closed = await freePort();
    await importAs('noregistry', 'prebuilt-no-registry', `localhost:${closed}/sandgym-test/good@${digests.good}`);
  }, 300_000);

  afterAll(async () => {
    registry?.kill('SIGTERM');
    for (const img of [...derived, ...pushed]) await sh('docker', ['rmi', '-f', img]);
    if (work) await rm(work, { recursive: true, force: true });
  }, 120_000);

  /**
   * `sandgym tasks build-envs DIR` in-process (the command's own code, exit code from its error as the CLI maps it):
   * the real CLI process is spawned once below, with --registry; a process per call would add seconds of start-up each.
   */
  const buildEnvs = async (key: string): Promise<{ code: number; stderr: string }> => {
    let stderr = '';
    const io = { out: () => undefined, err: (t: string) => void (stderr += t) };
    try {
      // --no-validate: the pull path is what is tested here (validation after a build: repo-revalidate.test.ts).
      const code = await runTasks(['build-envs', dirs[key] as string, '--no-validate'], io, {
        openSandboxProvider: () => Promise.reject(new Error('build-envs opens no sandbox')),
      });
      return { code, stderr };
    } catch (e) {
      return { code: exitCodeFor(e), stderr: `${stderr}sandgym tasks: ${(e as Error).message}\n` };
    }
  };

  describe('tasks build-envs', () => {
    it('a tag-only reference is refused at load and at import, naming the field', async () => {
      const t = tasks.good as LoadedTask;
      const json = JSON.parse(await readFile(path.join(t.dir, 'task.json'), 'utf8')) as { environment: { image: string } };
      json.environment.image = `${host}/sandgym-test/good:latest`;
      const bad = path.join(work, 'set-tag');
      await mkdir(bad);
      await sh('cp', ['-r', t.dir, bad]);
      await writeFile(path.join(bad, t.spec.id, 'task.json'), JSON.stringify(json));
      await expect(loadTaskSets([bad])).rejects.toThrow(/\/environment\/image must be pinned by digest/);
      const line = (await readFile(path.join(FIXTURES, 'parse-instances.jsonl'), 'utf8')).split('\n')[0] as string;
      const inst = JSON.parse(line) as { sandgym: { environment: unknown } };
      inst.sandgym.environment = { image: `${host}/sandgym-test/good:latest` };
      await writeFile(path.join(work, 'tag.jsonl'), JSON.stringify(inst));
      await expect(importSweBench({ file: path.join(work, 'tag.jsonl'), repoSource: FIXTURES, out: path.join(work, 'set-tag2') })).rejects.toThrow(
        /\/sandgym\/environment\/image must be pinned by digest/,
      );
      // A tag next to the digest is refused too: the digest alone decides.
      inst.sandgym.environment = { image: `${refs.good?.replace('@', ':v1@')}` };
      await writeFile(path.join(work, 'tag.jsonl'), JSON.stringify(inst));
      await expect(importSweBench({ file: path.join(work, 'tag.jsonl'), repoSource: FIXTURES, out: path.join(work, 'set-tag3') })).rejects.toThrow(
        /names a tag besides the digest/,
      );
    });

    it('pulls the pinned image (by its own registry, or through the operator registry), checks it and derives the task image', async () => {
      const t0 = performance.now();
      // The poisoned image's reference names a registry that does not exist: the real CLI pulls it through --registry.
      const [good, poisoned] = await Promise.all([
        buildEnvs('good'),
        runCli(
          ['tasks', 'build-envs', dirs.poisoned as string, '--registry', host, '--no-validate'],
          { SANDGYM_REPO_REGISTRY: 'registry.sandgym.invalid:1' },
          240_000,
        ),
      ]);
      expect(good.code, good.stderr).toBe(0);
      expect(good.stderr).toMatch(new RegExp(`pulling ${host}/sandgym-test/good@sha256:`));
      expect(good.stderr).toMatch(/pulled, checked and derived sandgym\/repo-env:[0-9a-f]{16} from/);
      expect(poisoned.code, poisoned.stderr).toBe(0);
      expect(poisoned.stderr).toMatch(new RegExp(`pulling ${host}/sandgym-test/poisoned@sha256:[0-9a-f]{64} \\(registry ${host}\\)`));
      const img = (tasks.good as LoadedTask).spec.image;
      expect(img).toBe(environmentImage((tasks.good as LoadedTask).repo?.environment as NonNullable<LoadedTask['repo']>['environment']));
      const label = await must('docker', ['image', 'inspect', '--format', '{{index .Config.Labels "sandgym.repo-env.source"}}', img]);
      expect(label.trim()).toBe(refs.good);
      // The judge's pytest is in the derived image, root-owned; the pulled image's start-up command is gone.
      const judge = await must('docker', ['run', '--rm', '--network', 'none', img, 'sh', '-c', 'stat -c %U /opt/sandgym/judge-site/_pytest/python.py']);
      expect(judge.trim()).toBe('root');
      // Run again: the derived image exists, nothing is pulled, its files are searched again for the tasks' fixed code.
      const again = await buildEnvs('good');
      expect(again.code, again.stderr).toBe(0);
      expect(again.stderr).not.toMatch(/pulling/);
      console.log(`[prebuilt] two pull+check+derive in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    }, 240_000);

    it('refuses an image holding the fixed code or a .git, a start-up hook, an executing .pth or LD_PRELOAD, naming the path (exit 1)', async () => {
      const [leak, git, site, pth, preload] = await Promise.all([
        buildEnvs('leak'),
        buildEnvs('git'),
        buildEnvs('site'),
        buildEnvs('pth'),
        buildEnvs('preload'),
      ]);
      expect(preload.code, preload.stderr).toBe(1);
      expect(preload.stderr).toMatch(/environment of prebuilt-preload: check: .* sets LD_PRELOAD in its configuration/);
      expect(leak.code, leak.stderr).toBe(1);
      expect(leak.stderr).toMatch(
        /environment of prebuilt-leak: leak: .* holds a copy of the fixed code of prebuilt-leak at \/usr\/local\/lib\/python3\.11\/dist-packages\/parse\.py/,
      );
      expect(git.code, git.stderr).toBe(1);
      expect(git.stderr).toMatch(/environment of prebuilt-git: leak: .* has a git repository at \/srv\/upstream\/\.git/);
      expect(site.code, site.stderr).toBe(1);
      expect(site.stderr).toMatch(/environment of prebuilt-site: check: .* an interpreter start-up hook at \/etc\/python3\.11\/sitecustomize\.py/);
      expect(pth.code, pth.stderr).toBe(1);
      expect(pth.stderr).toMatch(
        /environment of prebuilt-pth: check: .* a \.pth file with a line Python executes at start-up at \/usr\/lib\/python3\/dist-packages\/zz-sandgym\.pth/,
      );
      for (const k of ['leak', 'git', 'site', 'pth', 'preload']) {
        const exists = await sh('docker', ['image', 'inspect', (tasks[k] as LoadedTask).spec.image]);
        expect(exists.code, `${k}: no derived image after a refusal`).not.toBe(0);
      }
    }, 240_000);

    it('a manifest that is not the pinned digest, an unknown digest and a registry that is not there: clear errors, fast', async () => {
      const t0 = performance.now();
      const [tampered, unknown, none] = await Promise.all([buildEnvs('tampered'), buildEnvs('unknown'), buildEnvs('noregistry')]);
      expect(tampered.code, tampered.stderr).toBe(1);
      expect(tampered.stderr).toMatch(/environment of prebuilt-tampered: digest: .*not the pinned digest/);
      expect(unknown.code, unknown.stderr).toBe(4);
      expect(unknown.stderr).toMatch(/environment of prebuilt-unknown-digest: pull: .*the registry has no image with that digest/);
      expect(none.code, none.stderr).toBe(4);
      expect(none.stderr).toMatch(/environment of prebuilt-no-registry: pull: .*the registry cannot be reached/);
      expect(performance.now() - t0).toBeLessThan(60_000);
    }, 120_000);
  });

  describe('over the wire (docker driver)', () => {
    const wire = codeWire(() => ({ driver: 'docker', tasks: [dirs.good as string, dirs.poisoned as string], step_timeout_ms: 120_000 }));

    it('the reference fix scores 1 and the untouched base 0 in the pulled image', async () => {
      const ref = await playRepo(wire.env, 'prebuilt-good', NOTICE, referenceSteps(tasks.good as LoadedTask));
      expect(ref.reward, JSON.stringify(ref.grade)).toBe(1);
      expect(ref.grade.repo.report).toBe('ok');
      expectZero(await playRepo(wire.env, 'prebuilt-good', NOTICE, []), /FAIL_TO_PASS tests did not pass/);
    }, 240_000);

    it("a poisoned pytest in the image is not the judge's: the image's copy passes everything, the verdict does not", async () => {
      // The poison is live for the agent: the image's own pytest passes a test that must fail.
      const own = [
        "printf 'def test_must_fail():\\n    assert 1 == 2\\n' > /tmp/test_own.py",
        "python3 -c 'import _pytest.python as p; print(p.SANDGYM_POISON)'",
        'python3 -m pytest -q -p no:cacheprovider --rootdir=/tmp /tmp/test_own.py',
        'echo OWN-PYTEST-PASSED',
      ].join(' && ');
      const r = await playRepo(wire.env, 'prebuilt-poisoned-pytest', NOTICE, [
        `{ ${own}; } > /tmp/own.log 2>&1 || true; cat /tmp/own.log; grep -q OWN-PYTEST-PASSED /tmp/own.log`,
      ]);
      // The judge's pytest ran: the canaries came out right (report ok) and the FAIL_TO_PASS test failed.
      expectZero(r, /FAIL_TO_PASS tests did not pass/);
      expect(r.grade.repo.report).toBe('ok');
    }, 240_000);
  });
});
