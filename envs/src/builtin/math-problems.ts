// Seeded math problem generator for math-v0: every problem is built forwards from random
// integers, so the answer is exact by construction (no solver needed).
import type { Rng } from '../rng.js';

export type Difficulty = 'easy' | 'medium' | 'hard';

export interface MathProblem {
  template: string;
  question: string;
  answer: number;
}

interface Ranges {
  small: number;
  big: number;
}

const RANGES: Record<Difficulty, Ranges> = {
  easy: { small: 9, big: 50 },
  medium: { small: 20, big: 500 },
  hard: { small: 60, big: 5000 },
};

const NAMES = ['Ada', 'Ben', 'Chen', 'Dana', 'Eli', 'Fatima', 'Goran', 'Hana', 'Ivan', 'Juno', 'Kofi', 'Lena', 'Mateo', 'Nora', 'Omar', 'Priya'];
const ITEMS = ['apples', 'marbles', 'stickers', 'books', 'coins', 'pencils', 'stamps', 'cards'];

type Template = (rng: Rng, r: Ranges, d: Difficulty) => MathProblem;

const arithmetic: Template = (rng, r, d) => {
  const a = rng.int(2, r.big);
  const b = rng.int(2, r.small);
  const c = rng.int(2, r.big);
  if (d === 'easy') return { template: 'arithmetic', question: `Compute ${a} + ${b} * ${c}.`, answer: a + b * c };
  const e = rng.int(2, r.small);
  return { template: 'arithmetic', question: `Compute (${a} - ${c}) * ${b} + ${e}.`, answer: (a - c) * b + e };
};

const shopping: Template = (rng, r) => {
  const name = rng.pick(NAMES);
  const item = rng.pick(ITEMS);
  const start = rng.int(1, r.big);
  const bags = rng.int(2, Math.min(12, r.small));
  const per = rng.int(2, r.small);
  const given = rng.int(0, start);
  return {
    template: 'word_problem',
    question: `${name} has ${start} ${item}. ${name} buys ${bags} bags with ${per} ${item} in each bag, then gives away ${given} ${item}. How many ${item} does ${name} have now?`,
    answer: start + bags * per - given,
  };
};

const linear: Template = (rng, r) => {
  const x = rng.int(-r.small, r.small);
  const a = rng.pick([2, 3, 4, 5, 6, 7, 8, 9, -2, -3, -4, -5]);
  const b = rng.int(-r.big, r.big);
  const c = a * x + b;
  const bPart = b === 0 ? '' : b > 0 ? ` + ${b}` : ` - ${-b}`;
  return { template: 'linear_equation', question: `Solve for x: ${a}x${bPart} = ${c}.`, answer: x };
};

const rate: Template = (rng, r) => {
  const speed = rng.int(3, Math.min(120, r.big));
  const hours = rng.int(2, Math.min(12, r.small));
  const extra = rng.int(1, 9);
  return {
    template: 'rate',
    question: `A cyclist rides at ${speed} km/h for ${hours} hours, then ${extra} more hours at the same speed. How many kilometres does the cyclist ride in total?`,
    answer: speed * (hours + extra),
  };
};

const percent: Template = (rng, r) => {
  const pct = rng.pick([5, 10, 15, 20, 25, 30, 40, 50, 60, 75]);
  // A multiple of 20 makes every listed percentage an integer.
  const base = 20 * rng.int(1, Math.max(2, Math.floor(r.big / 20)));
  return { template: 'percent', question: `What is ${pct}% of ${base}?`, answer: (pct * base) / 100 };
};

const twoStep: Template = (rng, r) => {
  const x = rng.int(-r.small, r.small);
  const a = rng.int(2, 9);
  const b = rng.int(1, r.big);
  const m = rng.int(2, 9);
  const k = rng.int(-r.small, r.small);
  return {
    template: 'two_step',
    question: `If ${a}x - ${b} = ${a * x - b}, what is the value of ${m}x + ${k}?`,
    answer: m * x + k,
  };
};

const system: Template = (rng, r) => {
  const x = rng.int(-r.small, r.small);
  const y = rng.int(-r.small, r.small);
  return {
    template: 'linear_system',
    question: `x + y = ${x + y} and x - y = ${x - y}. What is x * y?`,
    answer: x * y,
  };
};

const TEMPLATES: Record<Difficulty, Template[]> = {
  easy: [arithmetic, shopping, rate, percent],
  medium: [arithmetic, shopping, linear, rate, percent, twoStep],
  hard: [arithmetic, linear, twoStep, system, percent],
};

export function generateMathProblem(rng: Rng, difficulty: Difficulty): MathProblem {
  const template = rng.pick(TEMPLATES[difficulty]);
  return template(rng, RANGES[difficulty], difficulty);
}

export const TEMPLATE_NAMES = ['arithmetic', 'word_problem', 'linear_equation', 'rate', 'percent', 'two_step', 'linear_system'];
