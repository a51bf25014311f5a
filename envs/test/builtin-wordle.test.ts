import { describe, expect, it } from 'vitest';
import { scoreGuess } from '../src/builtin/wordle-feedback.js';
import { WORDLE_WORDS } from '../src/builtin/wordle-words.js';
import { extractGuess, wordleEnv } from '../src/builtin/wordle.js';
import { testCtx } from './helpers.js';

const fb = (g: string, a: string) => scoreGuess(g, a).join('');

describe('wordle feedback', () => {
  it('marks greens, yellows and misses', () => {
    expect(fb('crane', 'crane')).toBe('GGGGG');
    expect(fb('crane', 'react')).toBe('YYG-Y');
    expect(fb('ghost', 'crane')).toBe('-----');
  });

  it('handles duplicate letters like the original game', () => {
    expect(fb('llama', 'hello')).toBe('YY---');
    // A green takes the only L, so the earlier L of the guess is a miss.
    expect(fb('llama', 'plane')).toBe('-GG--');
    expect(fb('geese', 'these')).toBe('--GGG');
    expect(fb('speed', 'abide')).toBe('--Y-Y');
    expect(fb('robot', 'floor')).toBe('YY-G-');
    expect(fb('sissy', 'essay')).toBe('Y-G-G');
    expect(fb('eerie', 'there')).toBe('Y-Y-G');
    expect(fb('aaaaa', 'apple')).toBe('G----');
    expect(fb('mamma', 'maple')).toBe('GG---');
  });

  it('never marks more copies of a letter than the answer has', () => {
    const words = ['sissy', 'essay', 'mamma', 'maple', 'aaaaa', 'apple', 'llama', 'hello', 'geese', 'eerie'];
    for (const g of words) {
      for (const a of words) {
        const marks = scoreGuess(g, a);
        const counts = new Map<string, number>();
        for (const ch of a) counts.set(ch, (counts.get(ch) ?? 0) + 1);
        const used = new Map<string, number>();
        marks.forEach((m, i) => {
          if (m !== '-') used.set(g[i]!, (used.get(g[i]!) ?? 0) + 1);
          if (m === 'G') expect(g[i]).toBe(a[i]);
        });
        for (const [ch, n] of used) expect(n).toBeLessThanOrEqual(counts.get(ch) ?? 0);
      }
    }
  });
});

describe('wordle-v0', () => {
  it('ships a few hundred 5-letter words', () => {
    expect(WORDLE_WORDS.length).toBeGreaterThan(300);
    expect(new Set(WORDLE_WORDS).size).toBe(WORDLE_WORDS.length);
    for (const w of WORDLE_WORDS) expect(w).toMatch(/^[a-z]{5}$/);
  });

  it('same seed -> same secret; different seeds differ', async () => {
    const answers = new Set<string>();
    for (let seed = 0; seed < 20; seed++) {
      const runs: unknown[] = [];
      for (let k = 0; k < 2; k++) {
        const env = await wordleEnv.create(testCtx(), {});
        await env.reset(seed, {});
        const steps = [];
        for (const g of ['crane', 'moist', 'pudgy']) steps.push(await env.step(g));
        runs.push(steps);
      }
      expect(runs[0]).toEqual(runs[1]);
      const env = await wordleEnv.create(testCtx(), {});
      await env.reset(seed, {});
      let last;
      for (let i = 0; i < 6; i++) last = await env.step('crane');
      answers.add(last!.info!.answer as string);
    }
    expect(answers.size).toBeGreaterThan(10);
  });

  it('rewards information, the solve and penalises invalid guesses', async () => {
    const env = await wordleEnv.create(testCtx(), {});
    await env.reset(0, { word: 'crane' });
    const s1 = await env.step('react');
    // react vs crane: YYGY- -> 1 new green + 4 new letters (r, e, a, c) x 0.5 -> information 3
    expect(s1.info!.feedback).toBe('YYGY-');
    // Components are the weighted contributions (1.0 solve, 0.1 information, -0.1 invalid_guess): they sum to the reward.
    expect(s1.info!.reward_components).toEqual({ solve: 0, information: 0.1 * 3, invalid_guess: 0 });
    expect(s1.reward).toBeCloseTo(0.3);
    expect(s1.terminated).toBe(false);
    const s2 = await env.step('xyzzy');
    expect(s2.info!.reward_components).toEqual({ solve: 0, information: 0, invalid_guess: -0.1 });
    expect(s2.reward).toBeCloseTo(-0.1);
    expect(s2.observation).toContain('not in word list');
    const s3 = await env.step('hi');
    expect(s3.info!.reward_components).toMatchObject({ invalid_guess: -0.1 });
    const s4 = await env.step('My guess is CRANE.');
    expect(s4.terminated).toBe(true);
    // 4 new greens (a was already green) + 1 new letter (n) x 0.5 -> information 4.5
    expect(s4.info!.reward_components).toEqual({ solve: 1, information: 0.1 * 4.5, invalid_guess: 0 });
    expect(s4.reward).toBeCloseTo(1.45);
    for (const s of [s1, s2, s3, s4]) expect(s.reward).toBe(Object.values(s.info!.reward_components as Record<string, number>).reduce((a, b) => a + b, 0));
    expect(s4.info!.answer).toBe('crane');
  });

  it('six unsolved guesses lose the game: terminated (a rule of the game, not a cut), and the word is revealed', async () => {
    const env = await wordleEnv.create(testCtx(), {});
    await env.reset(0, { word: 'zebra' });
    let s;
    for (let i = 0; i < 6; i++) s = await env.step('crane');
    expect(s).toMatchObject({ terminated: true, truncated: false });
    expect(s!.info!.answer).toBe('zebra');
    expect(s!.observation).toContain('zebra');
  });

  it('refuses an unknown reset option', async () => {
    const env = await wordleEnv.create(testCtx(), {});
    await expect(env.reset(0, { wrod: 'crane' })).rejects.toMatchObject({ name: 'InvalidArgument', path: '/wrod' });
  });

  it('rejects an unknown forced word', async () => {
    const env = await wordleEnv.create(testCtx(), {});
    await expect(env.reset(0, { word: 'qqqqq' })).rejects.toMatchObject({ name: 'InvalidArgument', path: '/word' });
  });

  it('extracts the guess from chatty answers', () => {
    expect(extractGuess('I will try: Slate')).toBe('slate');
    expect(extractGuess('  ABOUT ')).toBe('about');
    expect(extractGuess('hmm')).toBe('hmm');
  });
});
