import { describe, expect, it } from 'vitest';
import { mathEnv } from '../src/builtin/math.js';
import { generateMathProblem, type Difficulty } from '../src/builtin/math-problems.js';
import { lastBoxed, parseAnswer } from '../src/builtin/answer-parse.js';
import { Rng } from '../src/rng.js';
import { testCtx } from './helpers.js';

async function episode(seed: number, answer: (expected: number) => string, difficulty?: Difficulty) {
  const env = await mathEnv.create(testCtx(), difficulty ? { difficulty } : {});
  const r = await env.reset(seed, {});
  const probe = await mathEnv.create(testCtx(), difficulty ? { difficulty } : {});
  await probe.reset(seed, {});
  const expected = (await probe.step('')).info!.expected as number;
  const s = await env.step(answer(expected));
  return { r, s, expected };
}

describe('math-v0', () => {
  it('is deterministic under a seed and varies across seeds', async () => {
    const a = await mathEnv.create(testCtx(), {});
    const b = await mathEnv.create(testCtx(), {});
    const obs = new Set<string>();
    for (let seed = 0; seed < 30; seed++) {
      const ra = await a.reset(seed, {});
      const rb = await b.reset(seed, {});
      expect(ra).toEqual(rb);
      obs.add(ra.observation as string);
    }
    expect(obs.size).toBeGreaterThan(25);
  });

  it('covers several templates at every difficulty, with integer answers', () => {
    for (const d of ['easy', 'medium', 'hard'] as const) {
      const templates = new Set<string>();
      for (let seed = 0; seed < 200; seed++) {
        const p = generateMathProblem(new Rng(seed), d);
        templates.add(p.template);
        expect(Number.isFinite(p.answer)).toBe(true);
        expect(Number.isInteger(p.answer)).toBe(true);
      }
      expect(templates.size).toBeGreaterThanOrEqual(4);
    }
  });

  it('reward = 0.9 correctness + 0.1 format; reward_components are the two weighted parts', async () => {
    const boxed = await episode(7, (x) => `Let me think... so the answer is \\boxed{${x}}`);
    expect(boxed.s).toMatchObject({ reward: 1, terminated: true, info: { reward_components: { correctness: 0.9, format: 0.1 } } });
    const plain = await episode(7, (x) => `The answer is ${x}.`);
    expect(plain.s.reward).toBeCloseTo(0.9);
    expect(plain.s.info!.reward_components).toEqual({ correctness: 0.9, format: 0 });
    const wrongBoxed = await episode(7, (x) => `\\boxed{${x + 1}}`);
    expect(wrongBoxed.s.reward).toBeCloseTo(0.1);
    const nothing = await episode(7, () => 'no idea');
    expect(nothing.s.reward).toBe(0);
    expect(nothing.s.info!.reward_components).toEqual({ correctness: 0, format: 0 });
  });

  it('the last number wins when nothing is boxed; the last box wins when several are', async () => {
    const r = await episode(11, (x) => `first I guessed 3, then ${x}`);
    expect(r.s.info!.reward_components).toMatchObject({ correctness: 0.9 });
    const two = await episode(11, (x) => `\\boxed{${x + 5}} no wait \\boxed{${x}}`);
    expect(two.s.reward).toBe(1);
  });

  it('parses boxed content with commas, fractions and x =', () => {
    expect(parseAnswer('\\boxed{1,234}')).toEqual({ value: 1234, boxed: true });
    expect(parseAnswer('\\boxed{x = -7}')).toEqual({ value: -7, boxed: true });
    expect(parseAnswer('\\boxed{7/2}')).toEqual({ value: 3.5, boxed: true });
    expect(parseAnswer('\\boxed{\\frac{1}{2}} and 5')).toEqual({ value: 2, boxed: true });
    expect(lastBoxed('\\boxed{{a}}')).toBe('{a}');
    expect(parseAnswer('it is 12.5 kg')).toEqual({ value: 12.5, boxed: false });
  });

  it('difficulty kwarg is validated by the schema and changes the problems', async () => {
    const e = await mathEnv.create(testCtx(), { difficulty: 'easy' });
    const h = await mathEnv.create(testCtx(), { difficulty: 'hard' });
    const eo = (await e.reset(3, {})).observation;
    const ho = (await h.reset(3, {})).observation;
    expect(eo).not.toEqual(ho);
  });
});
