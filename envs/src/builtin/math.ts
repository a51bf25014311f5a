// math-v0: one seeded arithmetic/algebra word problem per episode, answered in one text action.
// reward = 0.9 * correctness + 0.1 * format (answer inside \boxed{}); info.reward_components holds the two
// weighted contributions (they sum to the reward). The one step always terminates: answering is the rule.
import { defineEnv } from '../api.js';
import { refuseUnknownOptions } from '../options.js';
import { randomSeed, Rng } from '../rng.js';
import { numbersEqual, parseAnswer } from './answer-parse.js';
import { generateMathProblem, type Difficulty, type MathProblem } from './math-problems.js';

const RUBRIC = [
  { name: 'correctness', weight: 0.9, description: '1 when the parsed answer equals the exact answer (last \\boxed{} content, else the last number)' },
  { name: 'format', weight: 0.1, description: '1 when the answer is given inside \\boxed{}' },
];

const INSTRUCTION = 'Solve the problem. Give your final answer as a number inside \\boxed{}, e.g. \\boxed{42}.';

export const mathEnv = defineEnv<{ difficulty?: Difficulty }>({
  id: 'math-v0',
  description: 'Arithmetic and algebra word problems generated from the seed; single text answer, graded exactly (0.9 correctness + 0.1 \\boxed{} format).',
  observation_space: { type: 'text', max_length: 2048 },
  action_space: { type: 'text', max_length: 8192 },
  max_episode_steps: 1,
  reward_range: [0, 1],
  stochastic: true,
  kwargs_schema: {
    type: 'object',
    properties: { difficulty: { enum: ['easy', 'medium', 'hard'], description: 'number ranges and templates (default medium)' } },
    additionalProperties: false,
  },
  rubric: RUBRIC,
  create(_ctx, kwargs) {
    const difficulty = kwargs.difficulty ?? 'medium';
    let problem: MathProblem | null = null;
    return {
      async reset(seed, options) {
        refuseUnknownOptions(options, []);
        const s = seed ?? randomSeed();
        problem = generateMathProblem(new Rng(s), difficulty);
        return {
          observation: `${problem.question}\n\n${INSTRUCTION}`,
          info: { seed: s, difficulty, template: problem.template },
        };
      },
      async step(action) {
        const p = problem as MathProblem;
        const parsed = parseAnswer(action as string);
        const correctness = parsed.value !== null && numbersEqual(parsed.value, p.answer) ? 1 : 0;
        const format = parsed.boxed ? 1 : 0;
        const components = { correctness: 0.9 * correctness, format: 0.1 * format };
        const reward = components.correctness + components.format;
        return {
          observation: correctness ? 'Correct.' : `Incorrect. The answer was ${p.answer}.`,
          reward,
          terminated: true,
          info: { reward_components: components, expected: p.answer, parsed: parsed.value },
        };
      },
      async close() {},
    };
  },
});
