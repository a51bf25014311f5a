// The images built by `sandgym images build` work with the hardened Docker driver: the Python image
// runs pytest and `node --test` as nobody on a read-only root, and carries no git.
import Docker from 'dockerode';
import { afterAll, describe, expect, it } from 'vitest';
import { DockerDriver } from '../../src/sandbox/docker/docker-driver.js';
import { RECIPES } from '../../src/sandbox/images/recipes.js';
import { dockerFacility, gate } from './facilities.js';

const PY = 'sandgym/python:1';
const facility = await dockerFacility();
let pyPresent = false;
if (facility.ok) {
  try {
    await new Docker().getImage(PY).inspect();
    pyPresent = true;
  } catch {
    pyPresent = false;
  }
}
const dockerOk = gate('docker', pyPresent ? facility : { ok: false, reason: `image ${PY} missing; run \`node bin/sandgym.js images build\`` });

describe('image recipes', () => {
  it('are versioned and distinct', () => {
    expect(new Set(RECIPES.map((r) => r.name)).size).toBe(RECIPES.length);
    for (const r of RECIPES) expect(r.name).toMatch(/^sandgym\/[a-z]+:\d+$/);
  });
});

describe.skipIf(!dockerOk)('sandgym/python:1 (docker)', () => {
  const driver = new DockerDriver({ instanceId: `images-${Date.now().toString(36)}` });
  afterAll(async () => {
    await driver.close();
  });

  it("runs pytest and node --test as the sandbox's agent uid, without git", async () => {
    const sb = await driver.create({ image: PY });
    await sb.putFiles([
      { path: 'test_x.py', content: 'def test_a():\n    assert 1 + 1 == 2\n' },
      { path: 'a.test.mjs', content: "import test from 'node:test'; import assert from 'node:assert'; test('x', () => assert.equal(1, 1));\n" },
    ]);
    const py = await sb.exec({ script: 'python3 -m pytest -q -p no:cacheprovider', timeout_ms: 60_000 });
    expect(py.exit_code).toBe(0);
    expect(py.stdout).toMatch(/1 passed/);
    const node = await sb.exec({ argv: ['node', '--test', 'a.test.mjs'], timeout_ms: 60_000 });
    expect(node.exit_code).toBe(0);
    const git = await sb.exec({ script: 'command -v git || echo none; id -u' });
    expect(git.stdout).toBe(`none\n${(sb as unknown as { agentUid: number }).agentUid}\n`);
    expect(git.stdout).not.toMatch(/\n0\n/);
  });
});
