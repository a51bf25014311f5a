// calculator-tools-v0: a tool_call env. The agent may call `calculate` any number of times (each
// returns the value or an error message, reward 0) and ends the episode with `submit`, graded
// exactly against the seeded problem's answer.
import type { ToolCallSpace } from '#protocol/index.js';
import { defineEnv } from '../api.js';
import { refuseUnknownOptions } from '../options.js';
import { randomSeed, Rng } from '../rng.js';
import { numbersEqual } from './answer-parse.js';
import { ArithError, evaluate, formatNumber } from './arith-parser.js';
import { generateCalcProblem, type CalcProblem } from './calc-problems.js';

const MAX_STEPS = 12;

const TOOLS: ToolCallSpace['tools'] = [
  {
    name: 'calculate',
    description: 'Evaluate an arithmetic expression with + - * / ^ and parentheses, e.g. "(37 * 12 - 5) / 3". Returns the value.',
    parameters: {
      type: 'object',
      properties: { expression: { type: 'string', minLength: 1, maxLength: 500 } },
      required: ['expression'],
      additionalProperties: false,
    },
  },
  {
    name: 'submit',
    description: 'Submit the final numeric answer. Ends the episode.',
    parameters: { type: 'object', properties: { answer: { type: 'number' } }, required: ['answer'], additionalProperties: false },
  },
];

const RUBRIC = [{ name: 'correctness', weight: 1.0, description: '1 when the submitted answer equals the exact answer (relative tolerance 1e-9)' }];

export const calculatorToolsEnv = defineEnv({
  id: 'calculator-tools-v0',
  description: `Multi-step arithmetic word problems from the seed, solved with a calculate tool and answered with submit (${MAX_STEPS} tool calls max); graded exactly.`,
  observation_space: { type: 'text', max_length: 4096 },
  action_space: { type: 'tool_call', tools: TOOLS },
  max_episode_steps: MAX_STEPS,
  reward_range: [0, 1],
  stochastic: true,
  kwargs_schema: { type: 'object', properties: {}, additionalProperties: false },
  rubric: RUBRIC,
  create() {
    let problem: CalcProblem | null = null;
    let calls = 0;
    return {
      async reset(seed, options) {
        refuseUnknownOptions(options, []);
        const s = seed ?? randomSeed();
        problem = generateCalcProblem(new Rng(s));
        calls = 0;
        return {
          observation: `${problem.question}\n\nUse the calculate tool for arithmetic, then call submit with the final number.`,
          info: { seed: s, template: problem.template },
        };
      },
      async step(action) {
        const p = problem as CalcProblem;
        const call = action as { name: string; arguments: Record<string, unknown> };
        calls++;
        if (call.name === 'calculate') {
          let observation: string;
          let ok = true;
          try {
            observation = formatNumber(evaluate(call.arguments.expression as string));
          } catch (e) {
            if (!(e instanceof ArithError)) throw e;
            ok = false;
            observation = `error: ${e.message}`;
          }
          return { observation, reward: 0, terminated: false, info: { reward_components: { correctness: 0 }, tool: 'calculate', ok, calls } };
        }
        const answer = call.arguments.answer as number;
        const correctness = numbersEqual(answer, p.answer) ? 1 : 0;
        return {
          observation: correctness ? 'Correct.' : `Incorrect. The answer was ${formatNumber(p.answer)}.`,
          reward: correctness,
          terminated: true,
          info: { reward_components: { correctness }, tool: 'submit', expected: p.answer, calls },
        };
      },
      async close() {},
    };
  },
});
