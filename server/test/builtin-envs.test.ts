// Every built-in env over the wire: seeded determinism, rewards whose reward_components are the weighted
// contributions of the rubric (they sum to the reward), action-space enforcement, episode ends (a game
// rule terminates), unknown kwargs and reset options refused.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RawClient } from './helpers/raw-client.js';
import { startServer, type TestServer } from './helpers/server.js';

let server: TestServer;
let c: RawClient;
beforeAll(async () => {
  server = await startServer({ fixtures: false });
  c = await RawClient.connect(server.url(), { binary: true });
});
afterAll(async () => {
  await c.close();
  await server.stop();
});

async function episode(envId: string, seed: number, actions: unknown[], kwargs?: Record<string, unknown>) {
  const s = await c.make(envId, kwargs);
  const reset = await c.ok('reset', { session: s, seed });
  const steps = [];
  for (const action of actions) {
    const r = await c.request('step', { session: s, action });
    steps.push(r.type === 'result' ? r.result : r.error);
    if (r.type === 'result' && (r.result.terminated || r.result.truncated)) break;
  }
  await c.ok('close', { session: s });
  return { reset, steps };
}

function rubricOf(envId: string, specs: { id: string; rubric?: { name: string; weight: number }[] }[]) {
  return specs.find((e) => e.id === envId)!.rubric!;
}

describe('built-in envs over the wire', () => {
  it('list_envs has the built-ins with rubrics and no fixtures', async () => {
    const envs = (await c.ok('list_envs')).envs as { id: string; rubric?: unknown[] }[];
    const ids = envs.map((e) => e.id);
    expect(ids).toEqual(expect.arrayContaining(['math-v0', 'wordle-v0', 'calculator-tools-v0']));
    expect(ids.filter((id) => id.startsWith('test/'))).toEqual([]);
    for (const e of envs) expect(e.rubric!.length).toBeGreaterThan(0);
  });

  it.each(['math-v0', 'wordle-v0', 'calculator-tools-v0'])(
    '%s: same seed and actions -> same transitions; reward = sum of the weighted components',
    async (envId) => {
      const envs = (await c.ok('list_envs')).envs;
      const rubric = rubricOf(envId, envs);
      const actions =
        envId === 'calculator-tools-v0'
          ? [
              { name: 'calculate', arguments: { expression: '2^10 - 24' } },
              { name: 'submit', arguments: { answer: 1000 } },
            ]
          : envId === 'wordle-v0'
            ? ['crane', 'moist', 'xxxxx', 'pudgy']
            : ['The answer is \\boxed{12}'];
      const a = await episode(envId, 1234, actions);
      const b = await episode(envId, 1234, actions);
      expect(a).toEqual(b);
      const other = await episode(envId, 98765, actions);
      expect(other.reset.observation).not.toEqual(a.reset.observation);
      for (const step of a.steps) {
        const comps = step.info.reward_components as Record<string, number>;
        expect(Object.keys(comps).sort()).toEqual(rubric.map((r) => r.name).sort());
        const sum = rubric.reduce((acc, r) => acc + comps[r.name]!, 0);
        expect(step.reward).toBeCloseTo(sum, 9);
      }
      // math (format 0.1) and wordle (information 0.1 per unit) score a non-zero part here, so the sum above is not
      // vacuous and would fail for unweighted components; calculator-tools' one weight is 1.
      if (envId !== 'calculator-tools-v0')
        expect(a.steps.some((st) => Object.values(st.info.reward_components as Record<string, number>).some((v) => v !== 0))).toBe(true);
    },
  );

  it.each(['math-v0', 'wordle-v0', 'calculator-tools-v0'])(
    '%s refuses an unknown kwarg and an unknown reset option with INVALID_ARGUMENT; the session survives',
    async (envId) => {
      const made = await c.fails('make', { env_id: envId, kwargs: { difficulty_level: 'easy' } });
      expect(made).toMatchObject({ code: 'INVALID_ARGUMENT', details: { path: '/difficulty_level' } });
      const s = await c.make(envId);
      const reset = await c.fails('reset', { session: s, seed: 1, options: { split: 'test' } });
      expect(reset).toMatchObject({ code: 'INVALID_ARGUMENT', details: { path: '/split' } });
      await c.ok('reset', { session: s, seed: 1 });
      await c.ok('close', { session: s });
    },
  );

  it('math-v0 is single-turn and grades a correct boxed answer 1.0', async () => {
    const s = await c.make('math-v0', { difficulty: 'easy' });
    await c.ok('reset', { session: s, seed: 5 });
    // Learn the answer from a wrong attempt, then answer correctly on the same seed.
    const wrong = await c.ok('step', { session: s, action: 'no idea' });
    expect(wrong).toMatchObject({ reward: 0, terminated: true, truncated: false });
    expect((await c.fails('step', { session: s, action: 'again' })).code).toBe('RESET_NEEDED');
    await c.ok('reset', { session: s, seed: 5 });
    const right = await c.ok('step', { session: s, action: `\\boxed{${wrong.info.expected}}` });
    expect(right.reward).toBe(1);
    expect((await c.fails('make', { env_id: 'math-v0', kwargs: { difficulty: 'insane' } })).code).toBe('INVALID_ARGUMENT');
    await c.ok('reset', { session: s, seed: 5 });
    expect((await c.fails('step', { session: s, action: 5 })).code).toBe('INVALID_ACTION');
    expect((await c.fails('step', { session: s, action: 'x'.repeat(9000) })).code).toBe('INVALID_ACTION');
  });

  it('wordle-v0: six wrong guesses lose the game (terminated, not truncated); it solves with the revealed word', async () => {
    const s = await c.make('wordle-v0');
    await c.ok('reset', { session: s, seed: 77 });
    let last;
    for (let i = 0; i < 6; i++) last = await c.ok('step', { session: s, action: 'crane' });
    expect(last).toMatchObject({ terminated: true, truncated: false });
    const word = last!.info.answer as string;
    expect((await c.fails('step', { session: s, action: 'crane' })).code).toBe('RESET_NEEDED');
    await c.ok('reset', { session: s, seed: 77 });
    const win = await c.ok('step', { session: s, action: word });
    expect(win).toMatchObject({ terminated: true, info: { reward_components: { solve: 1 } } });
    expect(win.reward).toBeGreaterThan(1);
    await c.ok('reset', { session: s, options: { word: 'zebra' } });
    expect((await c.fails('reset', { session: s, options: { word: 'zzzzz' } })).code).toBe('INVALID_ARGUMENT');
  });

  it('calculator-tools-v0 validates tool calls and grades submit', async () => {
    const s = await c.make('calculator-tools-v0');
    await c.ok('reset', { session: s, seed: 3 });
    expect((await c.fails('step', { session: s, action: { name: 'eval', arguments: { code: '1' } } })).code).toBe('INVALID_ACTION');
    expect((await c.fails('step', { session: s, action: { name: 'calculate', arguments: { expression: 5 } } })).code).toBe('INVALID_ACTION');
    expect((await c.ok('step', { session: s, action: { name: 'calculate', arguments: { expression: '6*7' } } })).observation).toBe('42');
    const bad = await c.ok('step', { session: s, action: { name: 'submit', arguments: { answer: -1 } } });
    expect(bad).toMatchObject({ reward: 0, terminated: true });
    await c.ok('reset', { session: s, seed: 3 });
    const good = await c.ok('step', { session: s, action: { name: 'submit', arguments: { answer: bad.info.expected } } });
    expect(good).toMatchObject({ reward: 1, terminated: true, info: { reward_components: { correctness: 1 } } });
    // A wrong submit still terminates: submit is how the agent ends the episode.
    expect(bad.info.reward_components).toEqual({ correctness: 0 });
  });
});
