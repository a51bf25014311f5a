// Shared bits of the sandbox end-to-end suites: facility gates (skip with the reason, or fail under
// SANDGYM_REQUIRE_DOCKER=1 / SANDGYM_REQUIRE_BWRAP=1), docker CLI queries, polling.
import { execFile } from 'node:child_process';
import { bwrapFacility, dockerFacility, gate } from '../../server/test/sandbox/facilities.js';

export const HAS_DOCKER = gate('docker', await dockerFacility());
export const HAS_BWRAP = gate('bwrap', await bwrapFacility());

export function docker(args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile('docker', args, (err, stdout, stderr) => (err ? reject(new Error(`docker ${args.join(' ')}: ${stderr || err.message}`)) : resolve(stdout)));
  });
}

/** Container names (one per line in `docker ps -a`) matching a label filter. */
export async function containersWithLabel(label: string): Promise<string[]> {
  return (await docker(['ps', '-a', '--filter', `label=${label}`, '--format', '{{.Names}}'])).split('\n').filter(Boolean);
}

export async function containerExists(name: string): Promise<boolean> {
  const out = await docker(['ps', '-a', '--filter', `name=^/${name}$`, '--format', '{{.Names}}']);
  return out.split('\n').includes(name);
}

/** Polls until `cond` holds or `timeoutMs` passes; returns the elapsed ms or throws with `what`. */
export async function waitFor(cond: () => Promise<boolean> | boolean, timeoutMs: number, what: string): Promise<number> {
  const t0 = Date.now();
  for (;;) {
    if (await cond()) return Date.now() - t0;
    if (Date.now() - t0 > timeoutMs) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

export const bash = (command: string, timeout_s?: number) => ({ name: 'bash', arguments: timeout_s === undefined ? { command } : { command, timeout_s } });
export const submit = { name: 'submit', arguments: {} };
