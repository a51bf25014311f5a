// The wordle-v0 word list (envs/data/wordle-words.txt), read once at startup.
import { readFileSync } from 'node:fs';

function load(): string[] {
  const text = readFileSync(new URL('../../data/wordle-words.txt', import.meta.url), 'utf8');
  return text
    .split(/\r?\n/)
    .map((l) => l.trim().toLowerCase())
    .filter((l) => /^[a-z]{5}$/.test(l));
}

export const WORDLE_WORDS: readonly string[] = load();
export const WORDLE_WORD_SET: ReadonlySet<string> = new Set(WORDLE_WORDS);
