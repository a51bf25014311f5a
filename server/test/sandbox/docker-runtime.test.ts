// The Docker driver's OCI runtime option (docs/SANDBOX.md, "gVisor (runsc)"): `--docker-runtime` /
// sandbox.runtime reaches the driver, a runtime the daemon lacks fails start-up with a typed error (never
// a fallback to runc or another driver), and /readyz names the runtime in use.
import { spawn } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { UsageError } from '../../src/cli/args.js';
import { EXIT, exitCodeFor } from '../../src/cli/exit-codes.js';
import { serveConfigFromArgs } from '../../src/cli/serve.js';
import { createDriver } from '../../src/sandbox/index.js';
import { SandboxRuntimeError } from '../../src/sandbox/errors.js';
import { REPO_ROOT, startServer, type TestServer } from '../../../test/helpers/server.js';
import { dockerFacility, gate, gvisorFacility } from './facilities.js';

const dockerOk = gate('docker', await dockerFacility());
const gvisorOk = gate('gvisor', await gvisorFacility());

describe('--docker-runtime', () => {
  it('sets sandbox.runtime over the config file and refuses a malformed name', async () => {
    expect((await serveConfigFromArgs(['--docker-runtime', 'runsc']))?.sandbox?.runtime).toBe('runsc');
    expect((await serveConfigFromArgs([]))?.sandbox?.runtime).toBeUndefined();
    for (const bad of ['', 'run sc', 'a/b', '$(id)', 'x'.repeat(65)]) {
      await expect(serveConfigFromArgs(['--docker-runtime', bad])).rejects.toThrow(UsageError);
    }
  });
});

describe.skipIf(!dockerOk)('docker runtime at start-up', () => {
  it('a runtime the daemon does not know is a SandboxRuntimeError from createDriver, naming what it has', async () => {
    const e = await createDriver('docker', { docker: { runtime: 'no-such-runtime' }, reaper: false }).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(SandboxRuntimeError);
    expect((e as SandboxRuntimeError).runtime).toBe('no-such-runtime');
    expect((e as SandboxRuntimeError).known).toContain('runc');
    expect((e as Error).message).toMatch(/has no runtime 'no-such-runtime'/);
  });

  it('sandgym serve fails start-up with the reason, under --driver auto too (no quiet fallback)', async () => {
    for (const driver of ['docker', 'auto']) {
      const proc = spawn(process.execPath, ['bin/sandgym.js', 'serve', '--port', '0', '--driver', driver, '--docker-runtime', 'no-such-runtime'], {
        cwd: REPO_ROOT,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      const exited = new Promise<number | null>((r) => proc.once('exit', (code) => r(code)));
      try {
        await new Promise<void>((resolve, reject) => {
          const timer = setTimeout(() => reject(new Error(`no start-up error within 120 s:\n${out}`)), 120_000);
          const onData = (c: Buffer) => {
            out += c.toString();
            if (/no runtime 'no-such-runtime'/.test(out)) {
              clearTimeout(timer);
              resolve();
            }
          };
          proc.stdout.on('data', onData);
          proc.stderr.on('data', onData);
        });
        expect(out).not.toMatch(/listening on/);
        // The exit code is EXIT.UNAVAILABLE once the process ends (exit-codes.ts maps SandboxRuntimeError).
        expect(exitCodeFor(new SandboxRuntimeError('x', []))).toBe(EXIT.UNAVAILABLE);
      } finally {
        if (proc.exitCode === null) proc.kill('SIGKILL');
        await exited;
      }
    }
  }, 300_000);
});

describe.skipIf(!gvisorOk)('docker runtime runsc (gVisor)', () => {
  let server: TestServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it('/readyz names the runtime; the driver says gVisor has no in-band OOM kill', async () => {
    for (const [runtime, oom] of [
      [undefined, true],
      ['runsc', false],
    ] as const) {
      server = await startServer({ driver: 'docker', sandbox: runtime ? { runtime } : {}, pools: { min_idle: 0 } });
      const body = (await (await fetch(`http://127.0.0.1:${server.port}/readyz`)).json()) as { sandbox?: { driver: string; runtime?: string } };
      expect(body.sandbox?.driver).toBe('docker');
      expect(body.sandbox?.runtime).toBe(runtime ?? 'runc');
      const d = await createDriver('docker', { docker: runtime ? { runtime } : {}, reaper: false });
      try {
        expect(d.capabilities.runtime).toBe(runtime ?? 'runc');
        expect(d.capabilities.oom_detection).toBe(oom);
      } finally {
        await d.close();
      }
      await server.close();
      server = undefined;
    }
  }, 180_000);
});
