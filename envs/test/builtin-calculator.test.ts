import { describe, expect, it } from 'vitest';
import { checkSpace } from '../../protocol/src/index.js';
import { ArithError, evaluate, formatNumber } from '../src/builtin/arith-parser.js';
import { generateCalcProblem } from '../src/builtin/calc-problems.js';
import { calculatorToolsEnv } from '../src/builtin/calculator-tools.js';
import { Rng } from '../src/rng.js';
import { testCtx } from './helpers.js';

describe('arithmetic parser', () => {
  it('evaluates with precedence, associativity and parentheses', () => {
    expect(evaluate('1 + 2 * 3')).toBe(7);
    expect(evaluate('(1 + 2) * 3')).toBe(9);
    expect(evaluate('2 ^ 3 ^ 2')).toBe(512);
    expect(evaluate('-2 ^ 2')).toBe(-4);
    expect(evaluate('(-2) ^ 2')).toBe(4);
    expect(evaluate('10 / 4')).toBe(2.5);
    expect(evaluate('8 - 3 - 2')).toBe(3);
    expect(evaluate('2 * -3')).toBe(-6);
    expect(evaluate(' 1.5e2 + .5 ')).toBe(150.5);
    expect(evaluate('3 × 4 ÷ 2')).toBe(6);
    expect(evaluate('2**10')).toBe(1024);
  });

  it('refuses anything that is not arithmetic', () => {
    for (const bad of ['', '1 +', '(1', '1)', 'process.exit()', '2 x 3', '1 / 0', '10 ^ 400', '(-8) ^ 0.5', 'a', '1..2', '1'.padEnd(600, '+1')]) {
      expect(() => evaluate(bad), bad.slice(0, 20)).toThrow(ArithError);
    }
    expect(() => evaluate('('.repeat(200) + '1' + ')'.repeat(200))).toThrow(/deep/);
  });

  it('formats results without float noise', () => {
    expect(formatNumber(0.1 + 0.2)).toBe('0.3');
    expect(formatNumber(12)).toBe('12');
  });
});

describe('calculator-tools-v0', () => {
  it('problems are exact and varied', () => {
    const templates = new Set<string>();
    for (let seed = 0; seed < 200; seed++) {
      const p = generateCalcProblem(new Rng(seed));
      templates.add(p.template);
      expect(Number.isFinite(p.answer)).toBe(true);
      expect(Math.round(p.answer * 100) / 100).toBeCloseTo(p.answer, 9);
    }
    expect(templates.size).toBe(5);
  });

  it('is deterministic under a seed', async () => {
    const a = await calculatorToolsEnv.create(testCtx(), {});
    const b = await calculatorToolsEnv.create(testCtx(), {});
    for (let seed = 0; seed < 10; seed++) expect(await a.reset(seed, {})).toEqual(await b.reset(seed, {}));
    expect((await a.reset(1, {})).observation).not.toEqual((await a.reset(2, {})).observation);
  });

  it('calculate returns values and errors; submit grades exactly', async () => {
    const env = await calculatorToolsEnv.create(testCtx(), {});
    await env.reset(5, {});
    const calc = await env.step({ name: 'calculate', arguments: { expression: '(12 + 30) * 2' } });
    expect(calc).toMatchObject({ observation: '84', reward: 0, terminated: false, info: { reward_components: { correctness: 0 }, ok: true } });
    const err = await env.step({ name: 'calculate', arguments: { expression: '1/0' } });
    expect(err.observation).toBe('error: division by zero');
    expect(err.terminated).toBe(false);
    const probe = await calculatorToolsEnv.create(testCtx(), {});
    await probe.reset(5, {});
    const expected = (await probe.step({ name: 'submit', arguments: { answer: -1 } })).info!.expected as number;
    const win = await env.step({ name: 'submit', arguments: { answer: expected } });
    expect(win).toMatchObject({ reward: 1, terminated: true, info: { reward_components: { correctness: 1 } } });
    await env.reset(5, {});
    const lose = await env.step({ name: 'submit', arguments: { answer: expected + 1 } });
    expect(lose).toMatchObject({ reward: 0, terminated: true, info: { reward_components: { correctness: 0 } } });
  });

  it('a calculator-driven solution of every template is graded correct', async () => {
    const env = await calculatorToolsEnv.create(testCtx(), {});
    for (let seed = 0; seed < 20; seed++) {
      const probe = await calculatorToolsEnv.create(testCtx(), {});
      await probe.reset(seed, {});
      const expected = (await probe.step({ name: 'submit', arguments: { answer: 0 } })).info!.expected as number;
      await env.reset(seed, {});
      const viaCalc = Number((await env.step({ name: 'calculate', arguments: { expression: `${expected} * 1` } })).observation);
      expect((await env.step({ name: 'submit', arguments: { answer: viaCalc } })).reward).toBe(1);
    }
  });

  it('the action space refuses unknown tools and bad arguments', () => {
    const space = calculatorToolsEnv.action_space;
    expect(checkSpace(space, { name: 'calculate', arguments: { expression: '1+1' } })).toBeNull();
    expect(checkSpace(space, { name: 'shell', arguments: {} })).not.toBeNull();
    expect(checkSpace(space, { name: 'submit', arguments: { answer: '3' } })).not.toBeNull();
    expect(checkSpace(space, { name: 'calculate', arguments: {} })).not.toBeNull();
  });
});
