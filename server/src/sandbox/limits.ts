// Limit resolution: per-request limits are merged over server defaults and checked against server
// maxima. Default policy is to refuse (a task that silently gets less memory than it asked for fails in
// confusing ways); `clamp` is available for operators who prefer best effort.
import os from 'node:os';
import { SandboxLimitError } from './errors.js';
import type { SandboxLimits } from './types.js';

export const DEFAULT_LIMITS: SandboxLimits = {
  memory_mb: 512,
  cpus: 1,
  pids: 256,
  disk_mb: 512,
  nofile: 1024,
  timeout_s: 30,
};

export function defaultMaxLimits(): SandboxLimits {
  return {
    memory_mb: 8192,
    cpus: Math.max(1, os.cpus().length),
    pids: 4096,
    disk_mb: 8192,
    nofile: 65536,
    timeout_s: 3600,
  };
}

export const DEFAULT_MAX_OUTPUT_BYTES = 256 * 1024;
export const MAX_OUTPUT_BYTES_LIMIT = 16 * 1024 * 1024;
/** Largest file / tar moved through the channel in one call. */
export const MAX_TRANSFER_BYTES = 256 * 1024 * 1024;

export type LimitPolicy = 'refuse' | 'clamp';

export function resolveLimits(
  requested: Partial<SandboxLimits> | undefined,
  defaults: SandboxLimits = DEFAULT_LIMITS,
  maxima: SandboxLimits = defaultMaxLimits(),
  policy: LimitPolicy = 'refuse',
): SandboxLimits {
  const out: SandboxLimits = { ...defaults };
  for (const key of Object.keys(defaults) as (keyof SandboxLimits)[]) {
    const v = requested?.[key];
    if (v === undefined) continue;
    if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) {
      throw new SandboxLimitError(key, `sandbox limit ${key} must be a positive number, got ${String(v)}`);
    }
    if (v > maxima[key]) {
      if (policy === 'refuse') {
        throw new SandboxLimitError(key, `sandbox limit ${key}=${v} exceeds the server maximum ${maxima[key]}`);
      }
      out[key] = maxima[key];
    } else {
      out[key] = v;
    }
  }
  // Integral limits: fractional pids or MiB make no sense to the kernel.
  out.memory_mb = Math.ceil(out.memory_mb);
  out.pids = Math.ceil(out.pids);
  out.disk_mb = Math.ceil(out.disk_mb);
  out.nofile = Math.ceil(out.nofile);
  return out;
}

/** Stable key of a limits profile, used for pool keys. */
export function limitsKey(l: SandboxLimits): string {
  return `m${l.memory_mb}-c${l.cpus}-p${l.pids}-d${l.disk_mb}-n${l.nofile}-t${l.timeout_s}`;
}
