// An env module (loaded with env_modules) that exercises what the built-in envs do not: task splits,
// make kwargs, tool parameters of every JSON Schema kind the inspector's forms generate, and a
// rubric with a negative weight. Its observations echo what it received, so tests can see exactly
// what the page sent.
import type { EnvDefinition } from '../../../envs/src/api.js';

const formEnv: EnvDefinition = {
  id: 'inspect/forms-v0',
  description: 'Test env: echoes reset options, kwargs and tool arguments.',
  observation_space: { type: 'text', max_length: 4096 },
  action_space: {
    type: 'tool_call',
    tools: [
      {
        name: 'configure',
        description: 'Every parameter kind.',
        parameters: {
          type: 'object',
          properties: {
            level: { type: 'integer', minimum: 0, maximum: 9, description: 'how hard' },
            mode: { enum: ['fast', 'slow'] },
            verbose: { type: 'boolean' },
            tags: { type: 'array', items: { type: 'string' } },
            note: { type: 'string' },
            content: { type: 'string' },
          },
          required: ['level', 'mode'],
          additionalProperties: false,
        },
      },
      { name: 'done', description: 'End the episode.', parameters: { type: 'object', properties: {}, additionalProperties: false } },
    ],
  },
  max_episode_steps: 5,
  reward_range: [-1, 1],
  rubric: [
    { name: 'progress', weight: 1 },
    { name: 'penalty', weight: -0.5 },
  ],
  tasks: { splits: { train: 3, eval: 1 } },
  kwargs_schema: { type: 'object', properties: { difficulty: { enum: ['easy', 'hard'] } }, additionalProperties: false },
  create(_ctx, kwargs) {
    return {
      async reset(seed, options) {
        return { observation: JSON.stringify({ seed, options, kwargs }), info: { task_id: options.task_id ?? null } };
      },
      async step(action) {
        const call = action as { name: string; arguments: Record<string, unknown> };
        const done = call.name === 'done';
        return {
          observation: JSON.stringify(call.arguments),
          reward: done ? 1 * 1 - 0.5 * 0 : 0.5 - 0.5 * 1,
          terminated: done,
          // The weighted contributions (progress x 1, penalty x -0.5): they sum to the reward.
          info: { reward_components: done ? { progress: 1, penalty: 0 } : { progress: 0.5, penalty: -0.5 } },
        };
      },
      async close() {},
    };
  },
};

export default formEnv;
