// The sandbox contract is declared once (sandbox-contract/) and its limit names come from the wire schema
// (env-spec.json SandboxInfo.limits): the built-in defaults, maxima and config bounds cover exactly them.
import { describe, expect, expectTypeOf, it } from 'vitest';
import { SCHEMAS } from '../../../protocol/src/index.js';
import type { Sandbox, SandboxLimits } from '../../../sandbox-contract/index.js';
import type { Sandbox as EnvSandbox, SandboxLimits as EnvSandboxLimits } from '../../../envs/src/sandbox-api.js';
import { CONFIG_SCHEMA } from '../../src/config.js';
import { DEFAULT_LIMITS, defaultMaxLimits } from '../../src/sandbox/limits.js';
import type { DriverSandbox, SandboxLimits as DriverSandboxLimits } from '../../src/sandbox/types.js';

const wireLimitNames = Object.keys(
  (SCHEMAS['env-spec.json'] as { properties: { sandbox: { properties: { limits: { properties: object } } } } }).properties.sandbox.properties.limits.properties,
).sort();

describe('sandbox contract', () => {
  it('limits are the wire schema limit names, everywhere', () => {
    expect(wireLimitNames.length).toBeGreaterThan(0);
    expect(Object.keys(DEFAULT_LIMITS).sort()).toEqual(wireLimitNames);
    expect(Object.keys(defaultMaxLimits()).sort()).toEqual(wireLimitNames);
    expect(Object.keys(CONFIG_SCHEMA.properties.sandbox.properties.limits_max.properties).sort()).toEqual(wireLimitNames);
  });

  it('envs and drivers see the same types; a driver sandbox is an env sandbox', () => {
    expectTypeOf<keyof SandboxLimits>().toEqualTypeOf<'memory_mb' | 'cpus' | 'pids' | 'disk_mb' | 'nofile' | 'timeout_s'>();
    expectTypeOf<SandboxLimits['cpus']>().toEqualTypeOf<number>();
    expectTypeOf<EnvSandboxLimits>().toEqualTypeOf<SandboxLimits>();
    expectTypeOf<DriverSandboxLimits>().toEqualTypeOf<SandboxLimits>();
    expectTypeOf<EnvSandbox>().toEqualTypeOf<Sandbox>();
    expectTypeOf<DriverSandbox>().toExtend<Sandbox>();
  });
});
