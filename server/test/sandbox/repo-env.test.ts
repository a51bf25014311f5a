// Issue 32 item 1: a repository task's environment recipe builds a real image FROM the local sandgym/python:1, with its
// pinned wheels sha256-checked on the host, unpacked into /opt/sandgym/site, cached by the recipe's content. The index
// is served in-process (an injected fetch with a wheel built here), so the test needs Docker but no network; a wheel
// whose bytes are not the pinned ones, or a pin no file of the index has, is an error naming the requirement and step.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { environmentImage, type EnvironmentRecipe } from '../../../envs/src/repo/repo-environment.js';
import { ensureRepoEnvImage, imageExists, RepoEnvBuildError } from '../../src/cli/repo-env-build.js';
import { dockerFacility, gate } from './facilities.js';

const dockerOk = gate('docker', await dockerFacility('sandgym/python:1'));

describe.skipIf(!dockerOk)('repository environment images (docker)', () => {
  let dir: string;
  let wheel: Uint8Array;
  let sha: string;
  const name = `sgdemo${process.pid}`;
  const filename = `${name}-1.0-py3-none-any.whl`;
  /** A package index with one release of one pure wheel; `tamper` serves other bytes than the listed digest. */
  const index =
    (tamper = false): typeof fetch =>
    async (input) => {
      const url = String(input);
      if (url === `https://index.test/pypi/${name}/json`)
        return new Response(JSON.stringify({ releases: { '1.0': [{ filename, url: `../../files/${filename}`, digests: { sha256: sha } }] } }));
      if (url === `https://index.test/files/${filename}`) return new Response(Buffer.from(tamper ? new Uint8Array([...wheel, 0]) : wheel));
      return new Response('not found', { status: 404 });
    };
  let recipe: EnvironmentRecipe;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'sandgym-repo-env-'));
    const whl = path.join(dir, filename);
    // A wheel is a zip: the package and its dist-info (what an index serves).
    execFileSync('python3', [
      '-c',
      `import zipfile,sys\nz=zipfile.ZipFile(sys.argv[1],'w')\nz.writestr('${name}/__init__.py','VALUE = 42\\n')\nz.writestr('${name}-1.0.dist-info/METADATA','Name: ${name}\\nVersion: 1.0\\n')\nz.close()`,
      whl,
    ]);
    wheel = new Uint8Array(await readFile(whl));
    sha = createHash('sha256').update(wheel).digest('hex');
    recipe = { base_image: 'sandgym/python:1', python_path: ['.'], requirements: [`${name}==1.0 --hash=sha256:${sha}`], pytest_plugins: [], pytest_args: [] };
  });
  afterAll(async () => {
    if (recipe) execFileSync('sh', ['-c', 'docker rmi -f "$1" >/dev/null 2>&1; true', 'rmi', environmentImage(recipe)]);
    await rm(dir, { recursive: true, force: true });
  });

  it('builds once per content: the wheel importable from the image, the second call reuses it', async () => {
    const image = environmentImage(recipe);
    expect(image).toMatch(/^sandgym\/repo-env:[0-9a-f]{16}$/);
    const first = await ensureRepoEnvImage(recipe, { index: 'https://index.test', fetch: index() });
    expect(first).toMatchObject({ image, built: true });
    const out = execFileSync(
      'docker',
      ['run', '--rm', '--network', 'none', image, 'python3', '-I', '-c', `import ${name}; print(${name}.VALUE, ${name}.__file__)`],
      {
        encoding: 'utf8',
      },
    );
    expect(out.trim()).toBe(`42 /opt/sandgym/site/${name}/__init__.py`);
    const again = await ensureRepoEnvImage(recipe, { index: 'https://index.test', fetch: index() });
    expect(again.built).toBe(false);
    expect(again.ms).toBeLessThan(5000);
  }, 120_000);

  it('a tampered download and a pin no file has are refused, naming the requirement and the step; nothing is tagged', async () => {
    const other = { ...recipe, requirements: [`${name}==1.0 --hash=sha256:${'0'.repeat(64)}`] };
    const e1 = await ensureRepoEnvImage(other, { index: 'https://index.test', fetch: index() }).catch((e: unknown) => e);
    expect(e1).toBeInstanceOf(RepoEnvBuildError);
    expect(e1).toMatchObject({ step: 'resolve', message: expect.stringContaining(`${name}==1.0`) });
    // The pinned file, served with other bytes: the image (removed first) is not built.
    const fresh = { ...recipe };
    execFileSync('sh', ['-c', 'docker rmi -f "$1" >/dev/null 2>&1; true', 'rmi', environmentImage(fresh)]);
    const e2 = await ensureRepoEnvImage(fresh, { index: 'https://index.test', fetch: index(true) }).catch((e: unknown) => e);
    expect(e2).toMatchObject({ step: 'hash' });
    expect(await imageExists(environmentImage(fresh))).toBe(false);
  }, 120_000);
});
