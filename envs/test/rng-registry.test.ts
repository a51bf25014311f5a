import { describe, expect, it } from 'vitest';
import { builtinEnvs } from '../src/builtin/index.js';
import { fixtureEnvs } from '../src/fixtures/index.js';
import { EnvDefinitionError, EnvRegistry } from '../src/registry.js';
import { Rng } from '../src/rng.js';

describe('Rng', () => {
  it('is deterministic and uses the whole 53-bit seed', () => {
    const seq = (s: number) =>
      Array.from(
        { length: 5 },
        (
          (r) => () =>
            r.nextU32()
        )(new Rng(s)),
      );
    expect(seq(42)).toEqual(seq(42));
    expect(seq(42)).not.toEqual(seq(43));
    expect(seq(2 ** 40)).not.toEqual(seq(2 ** 40 + 2 ** 33));
    expect(seq(2 ** 53 - 1)).toHaveLength(5);
  });

  it('int and pick stay in range', () => {
    const r = new Rng(1);
    for (let i = 0; i < 1000; i++) {
      const v = r.int(-3, 3);
      expect(v).toBeGreaterThanOrEqual(-3);
      expect(v).toBeLessThanOrEqual(3);
      expect(['a', 'b']).toContain(r.pick(['a', 'b']));
    }
    expect(() => new Rng(-1)).toThrow(RangeError);
    expect(() => new Rng(0.5)).toThrow(RangeError);
  });
});

describe('EnvRegistry', () => {
  it('registers built-ins and fixtures with valid specs', () => {
    const r = new EnvRegistry();
    r.registerAll(builtinEnvs);
    r.registerAll(fixtureEnvs);
    expect(r.list().map((e) => e.def.id)).toContain('math-v0');
    const math = r.get('math-v0')!;
    expect(math.spec).toMatchObject({ id: 'math-v0', max_episode_steps: 1, rubric: expect.any(Array), stochastic: true });
    expect(r.get('calculator-tools-v0')!.spec.tools).toHaveLength(2);
    expect(r.get('test/slow-v0')!.validateKwargs!({ delay_ms: 5 })).toBe(true);
    expect(r.get('test/slow-v0')!.validateKwargs!({ delay_ms: -5 })).toBe(false);
  });

  it('an env without kwargs_schema takes no kwargs: an unknown one is refused, naming it; the wire spec stays without a schema', () => {
    const r = new EnvRegistry();
    r.registerAll(fixtureEnvs);
    const counter = r.get('test/counter-v0')!;
    expect(counter.spec.kwargs_schema).toBeUndefined();
    expect(counter.validateKwargs({})).toBe(true);
    expect(counter.validateKwargs({ size: 3 })).toBe(false);
    expect(counter.validateKwargs.errors?.[0]).toMatchObject({ keyword: 'additionalProperties', params: { additionalProperty: 'size' } });
  });

  it('the wire spec of a sandbox env carries image and limits only', async () => {
    const { validateEnvSpec } = await import('../../protocol/src/index.js');
    const r = new EnvRegistry();
    const entry = r.register({ ...fixtureEnvs[0]!, id: 'x/sb', sandbox: { image: 'img', limits: { memory_mb: 256 }, workspace: '/w' } });
    expect(entry.spec.sandbox).toEqual({ image: 'img', limits: { memory_mb: 256 } });
    expect(validateEnvSpec(entry.spec).ok).toBe(true);
  });

  it('refuses duplicates and malformed definitions with the field named', () => {
    const r = new EnvRegistry();
    r.registerAll(fixtureEnvs);
    expect(() => r.register(fixtureEnvs[0]!)).toThrow(/already registered/);
    const base = fixtureEnvs[0]!;
    expect(() => r.register({ ...base, id: 'x/1', create: undefined as never })).toThrow(/create must be a function/);
    expect(() => r.register({ ...base, id: 'x/2', action_space: { type: 'discrete', n: 0 } })).toThrow(EnvDefinitionError);
    expect(() => r.register({ ...base, id: 'x/3', max_episode_steps: 0 })).toThrow(/max_episode_steps/);
    expect(() => r.register({ ...base, id: 'bad id!' })).toThrow(/id must be/);
    expect(() => r.register({ ...base, id: 'x/4', kwargs_schema: { type: 'nonsense' } })).toThrow(/kwargs_schema/);
  });
});
