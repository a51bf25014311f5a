// wordle-v0: guess a seeded 5-letter word in 6 turns with G/Y/- feedback after each guess.
// Per-step reward = 1.0 * solve + 0.1 * information - 0.1 * invalid_guess, where information is
// (newly confirmed green positions) + 0.5 * (newly discovered letters of the answer).
// An invalid guess (not 5 letters, or not in the word list) is a valid action: it gets feedback,
// scores invalid_guess = 1 and uses up the turn (so the 6-step limit always means 6 turns).
// info.reward_components holds the weighted contributions (they sum to the reward). The game ends by its
// rules: solved, or lost after the 6th guess; both are `terminated` (a lost game is not cut short).
import { InvalidArgument, defineEnv } from '../api.js';
import { refuseUnknownOptions } from '../options.js';
import { randomSeed, Rng } from '../rng.js';
import { scoreGuess, type Mark } from './wordle-feedback.js';
import { WORDLE_WORD_SET, WORDLE_WORDS } from './wordle-words.js';

const MAX_GUESSES = 6;

const RUBRIC = [
  { name: 'solve', weight: 1.0, description: '1 on the step that guesses the word' },
  { name: 'information', weight: 0.1, description: 'newly confirmed green positions + 0.5 x newly discovered letters of the answer' },
  { name: 'invalid_guess', weight: -0.1, description: '1 when the guess is not a 5-letter word from the list (the turn is used up)' },
];

const INTRO =
  `Guess the secret 5-letter English word in ${MAX_GUESSES} tries. Reply with one 5-letter word. ` +
  'After each guess you get one mark per letter: G = right letter, right spot; Y = in the word, wrong spot; - = not in the word (or no more copies of it).';

/** The guess inside an answer: the last standalone 5-letter word, lower-cased. */
export function extractGuess(text: string): string {
  const words = text.toLowerCase().match(/[a-z]+/g) ?? [];
  const five = words.filter((w) => w.length === 5);
  return five.length ? (five[five.length - 1] as string) : text.trim().toLowerCase();
}

export const wordleEnv = defineEnv({
  id: 'wordle-v0',
  description: `Wordle: guess a seeded 5-letter word in ${MAX_GUESSES} turns with per-letter feedback; per-step information reward and a solve bonus.`,
  observation_space: { type: 'text', max_length: 2048 },
  action_space: { type: 'text', max_length: 256 },
  max_episode_steps: MAX_GUESSES,
  reward_range: [-0.1, 1.75],
  stochastic: true,
  kwargs_schema: { type: 'object', properties: {}, additionalProperties: false },
  rubric: RUBRIC,
  create() {
    let answer = '';
    let turn = 0;
    let board: string[] = [];
    const greens = new Set<number>();
    const known = new Set<string>();
    return {
      async reset(seed, options) {
        refuseUnknownOptions(options, ['word']);
        const s = seed ?? randomSeed();
        const forced = options.word;
        if (forced !== undefined) {
          if (typeof forced !== 'string' || !WORDLE_WORD_SET.has(forced.toLowerCase()))
            throw new InvalidArgument('options.word must be a word from the wordle-v0 list', '/word');
          answer = forced.toLowerCase();
        } else answer = new Rng(s).pick(WORDLE_WORDS);
        turn = 0;
        board = [];
        greens.clear();
        known.clear();
        return { observation: `Wordle game #${s}. ${INTRO}\nGuesses left: ${MAX_GUESSES}`, info: { seed: s, guesses_left: MAX_GUESSES } };
      },
      async step(action) {
        turn++;
        const guess = extractGuess(action as string);
        const left = MAX_GUESSES - turn;
        let solve = 0;
        let information = 0;
        let invalid = 0;
        let line: string;
        let marks: Mark[] | null = null;
        if (!/^[a-z]{5}$/.test(guess)) {
          invalid = 1;
          line = `${guess.slice(0, 20) || '(empty)'} -> invalid: a guess must be exactly 5 letters`;
        } else if (!WORDLE_WORD_SET.has(guess)) {
          invalid = 1;
          line = `${guess} -> not in word list`;
        } else {
          marks = scoreGuess(guess, answer);
          for (let i = 0; i < 5; i++) {
            const g = guess[i] as string;
            if (marks[i] === 'G' && !greens.has(i)) {
              greens.add(i);
              information += 1;
            }
            if (marks[i] !== '-' && !known.has(g)) {
              known.add(g);
              information += 0.5;
            }
          }
          if (guess === answer) solve = 1;
          line = `${guess} -> ${marks.join(' ')}`;
        }
        board.push(line);
        const solved = solve === 1;
        const lost = !solved && left === 0;
        const terminated = solved || lost;
        // (invalid_guess: -0.1 or 0, never -0, so a message encodes the same in JSON and msgpack.)
        const components = { solve: 1.0 * solve, information: 0.1 * information, invalid_guess: invalid ? -0.1 : 0 };
        const reward = components.solve + components.information + components.invalid_guess;
        const tail = solved
          ? `Solved in ${turn} ${turn === 1 ? 'guess' : 'guesses'}!`
          : lost
            ? `Out of guesses. The word was ${answer}.`
            : `Guesses left: ${left}`;
        const info: Record<string, unknown> = {
          reward_components: components,
          guesses_left: left,
          feedback: marks ? marks.join('') : null,
        };
        if (terminated) info.answer = answer;
        return { observation: `${board.join('\n')}\n${tail}`, reward, terminated, truncated: false, info };
      },
      async close() {},
    };
  },
});
