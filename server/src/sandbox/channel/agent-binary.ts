// Where the binary judge agent (sandbox-agent/, protocol 3) comes from and where it goes in a sandbox.
// The driver bind-mounts the host file read-only at AGENT_BINARY_TARGET (Docker: a bind mount; bubblewrap:
// --ro-bind), so it runs on any image; where it cannot be placed, the POSIX sh agent (agent-script.ts)
// is the fallback. Built by scripts/build-sandbox-agent.sh (stdlib Go, static, cached by source hash).
import { constants } from 'node:fs';
import { access } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** Path of the agent binary inside every sandbox (a read-only bind of the host file). */
export const AGENT_BINARY_TARGET = '/run/sandgym-agent';

/** Which agent a driver starts: `binary` (refuse to start without it), `shell`, or `auto` (binary when built). */
export type AgentChoice = 'binary' | 'shell' | 'auto';

const PACKAGE_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../..');

/** The host file: $SANDGYM_AGENT_BINARY, else the build script's output in the repository. */
export function defaultAgentBinaryPath(): string {
  return process.env.SANDGYM_AGENT_BINARY || path.join(PACKAGE_ROOT, 'sandbox-agent', 'dist', 'sandgym-agent');
}

/** The driver's default choice: $SANDGYM_SANDBOX_AGENT when it names one, else `auto`. */
export function defaultAgentChoice(): AgentChoice {
  const v = process.env.SANDGYM_SANDBOX_AGENT;
  return v === 'binary' || v === 'shell' || v === 'auto' ? v : 'auto';
}

export class AgentBinaryMissingError extends Error {
  constructor(readonly binaryPath: string) {
    super(`sandbox agent binary not found or not executable at ${binaryPath} (build it: bash scripts/build-sandbox-agent.sh)`);
    this.name = 'AgentBinaryMissingError';
  }
}

/**
 * Resolves the choice once per driver (at start, never per command): the absolute host path of the
 * binary to mount, or null for the shell agent.
 */
export async function resolveAgentBinary(choice: AgentChoice, binaryPath = defaultAgentBinaryPath()): Promise<string | null> {
  if (choice === 'shell') return null;
  const abs = path.resolve(binaryPath);
  try {
    await access(abs, constants.X_OK);
    return abs;
  } catch {
    if (choice === 'binary') throw new AgentBinaryMissingError(abs);
    return null;
  }
}
