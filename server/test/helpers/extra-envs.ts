// Test-only envs for error paths the contract fixtures do not cover.
import { InvalidArgument, type EnvDefinition } from '../../../envs/src/api.js';
import { fixtureEnvs } from '../../../envs/src/fixtures/index.js';
import { EnvRegistry } from '../../../envs/src/registry.js';

/** What happened to the env instances (shared with the test through this module). */
export const lifecycle = { created: 0, closed: 0, aborted: 0 };

const discrete2 = { type: 'discrete', n: 2 } as const;

export const extraEnvs: EnvDefinition[] = [
  {
    id: 'x/bad-reward-v0',
    description: 'action 1 -> NaN reward, otherwise fine',
    observation_space: discrete2,
    action_space: discrete2,
    max_episode_steps: null,
    create: () => ({
      reset: async () => ({ observation: 0 }),
      step: async (a) => ({ observation: 0, reward: a === 1 ? Number.NaN : 0, terminated: false }),
      close: async () => {},
    }),
  },
  {
    id: 'x/bad-obs-v0',
    description: 'observation holds Infinity (cannot be encoded)',
    observation_space: { type: 'box', shape: [], dtype: 'float64', low: '-inf', high: 'inf' },
    action_space: discrete2,
    max_episode_steps: null,
    create: () => ({
      reset: async () => ({ observation: 0 }),
      step: async () => ({ observation: Number.POSITIVE_INFINITY, reward: 0, terminated: false }),
      close: async () => {},
    }),
  },
  {
    id: 'x/args-v0',
    description: 'reset option level must be <= 3; step action 1 is refused by the env',
    observation_space: discrete2,
    action_space: discrete2,
    max_episode_steps: null,
    // Declared so that `explode` reaches create(), whose own InvalidArgument is under test (an env without a schema takes no kwargs).
    kwargs_schema: { type: 'object', properties: { explode: { type: 'boolean' } }, additionalProperties: false },
    create: (_ctx, kwargs) => {
      if (kwargs.explode) throw new InvalidArgument('explode is not allowed', '/explode');
      return {
        reset: async (_seed, options) => {
          if (typeof options.level === 'number' && options.level > 3) throw new InvalidArgument('level must be <= 3', '/level');
          return { observation: 0, info: { level: options.level ?? 0 } };
        },
        step: async (a) => {
          if (a === 1) throw new InvalidArgument('the env refuses 1 right now', '');
          return { observation: 0, reward: 0, terminated: false };
        },
        close: async () => {},
      };
    },
  },
  {
    id: 'x/lifecycle-v0',
    description: 'counts creates, closes and aborts',
    observation_space: discrete2,
    action_space: discrete2,
    max_episode_steps: null,
    create: (ctx) => {
      lifecycle.created++;
      ctx.signal.addEventListener('abort', () => lifecycle.aborted++);
      return {
        reset: async () => ({ observation: 0 }),
        step: async () => ({ observation: 0, reward: 0, terminated: false }),
        close: async () => {
          lifecycle.closed++;
        },
      };
    },
  },
  {
    id: 'x/slow-create-v0',
    description: 'create takes kwargs.ms milliseconds',
    observation_space: discrete2,
    action_space: discrete2,
    max_episode_steps: null,
    kwargs_schema: { type: 'object', properties: { ms: { type: 'integer', minimum: 0 } }, additionalProperties: false },
    create: async (_ctx, kwargs) => {
      await new Promise((r) => setTimeout(r, Number(kwargs.ms ?? 0)));
      lifecycle.created++;
      return {
        reset: async () => ({ observation: 0 }),
        step: async () => ({ observation: 0, reward: 0, terminated: false }),
        close: async () => {
          lifecycle.closed++;
        },
      };
    },
  },
  {
    id: 'x/hang-v0',
    description: 'step never settles unless action 0',
    observation_space: discrete2,
    action_space: discrete2,
    max_episode_steps: null,
    create: () => ({
      reset: async () => ({ observation: 0 }),
      step: (a) => (a === 0 ? Promise.resolve({ observation: 0, reward: 0, terminated: false }) : new Promise(() => undefined)),
      close: async () => {},
    }),
  },
];

export function testRegistry(): EnvRegistry {
  const r = new EnvRegistry();
  r.registerAll(fixtureEnvs);
  r.registerAll(extraEnvs);
  return r;
}
