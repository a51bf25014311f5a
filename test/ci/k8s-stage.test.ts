// The Kubernetes stage of `npm test` (scripts/k8s/test-stage.sh, `npm run test:k8s`) as .ci/run drives it:
// it waits for the build .ci/run started in the background and fails, never skips, when that build failed or
// died without an exit status (without touching the cluster: no `up` marker, so the exit trap runs no
// down.sh); the waiting itself ends when the exit status appears. And `npm test` runs it last, after a
// vitest stage that leaves out exactly the suites it runs.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const STAGE = join(ROOT, 'scripts/k8s/test-stage.sh');

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function ciDir(files: Record<string, string>): string {
  const d = mkdtempSync(join(tmpdir(), 'sandgym-k8s-stage-'));
  dirs.push(d);
  for (const [name, text] of Object.entries(files)) writeFileSync(join(d, name), text);
  return d;
}

function stage(dir: string, timeoutMs = 60_000): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const p = spawn('bash', [STAGE], { env: { ...process.env, SANDGYM_K8S_CI: dir }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    p.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const timer = setTimeout(() => p.kill('SIGKILL'), timeoutMs);
    p.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, out });
    });
  });
}

/** The pid of a process that has exited (and been reaped). */
function deadPid(): Promise<number> {
  return new Promise((resolve) => {
    const p = spawn('true');
    p.on('close', () => resolve(p.pid!));
  });
}

describe('scripts/k8s/test-stage.sh under .ci/run', () => {
  it('fails with the build log when the background build failed, without bringing the cluster up', async () => {
    const dir = ciDir({ 'build.rc': '1\n', 'build.log': 'go: compile error in kube-apiserver\n', 'build.pid': `${await deadPid()}\n` });
    const r = await stage(dir);
    expect(r.code, r.out).toBe(1);
    expect(r.out).toContain('the Kubernetes build failed (exit 1)');
    expect(r.out).toContain('go: compile error in kube-apiserver');
    expect(existsSync(join(dir, 'up'))).toBe(false);
  });

  it('fails when the build is gone without an exit status (killed), instead of waiting forever', async () => {
    const dir = ciDir({ 'build.log': 'build.sh: building kubelet v1.37.2\n', 'build.pid': `${await deadPid()}\n` });
    const r = await stage(dir);
    expect(r.code, r.out).toBe(1);
    expect(r.out).toContain('gone without an exit status');
    expect(r.out).toContain('building kubelet');
    expect(existsSync(join(dir, 'up'))).toBe(false);
  });

  it('waits while the build runs and acts on its exit status once it appears', async () => {
    // A live "build" (this sleep) that writes a failing status after 3 s: the stage must still be waiting
    // after 1 s, then fail on the status.
    const dir = ciDir({ 'build.log': 'still building\n' });
    const build = spawn('bash', ['-c', `sleep 3; echo 2 >"${dir}/build.rc"`], { stdio: 'ignore' });
    writeFileSync(join(dir, 'build.pid'), `${build.pid!}\n`);
    const t0 = Date.now();
    const r = await stage(dir);
    expect(r.code, r.out).toBe(1);
    expect(r.out).toContain('the Kubernetes build failed (exit 2)');
    expect(Date.now() - t0).toBeGreaterThanOrEqual(2_500);
  });
});

describe('npm test', () => {
  it('runs the Kubernetes stage last, after a vitest stage that leaves out exactly its suites', () => {
    const scripts = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
    const steps = scripts.test!.split('&&').map((s) => s.trim());
    expect(steps.at(-1)).toBe('npm run test:k8s');
    expect(scripts['test:k8s']).toBe('bash scripts/k8s/test-stage.sh');
    const vitest = steps.find((s) => s.startsWith('vitest run'))!;
    expect(vitest).toContain("--exclude 'test/kubernetes/**'");
    expect(vitest).toContain("--exclude 'server/test/sandbox/kubernetes-*.test.ts'");
    // The stage runs those (and the contract on pods only).
    const stageScript = readFileSync(STAGE, 'utf8');
    expect(stageScript).toMatch(
      /SANDGYM_CONTRACT_DRIVERS=kubernetes npx vitest run test\/kubernetes\/ server\/test\/sandbox\/kubernetes- server\/test\/sandbox\/driver-contract\.test\.ts/,
    );
  });
});
