// Wordle scoring with correct duplicate-letter handling: greens are taken first, then each
// remaining guess letter is yellow only while unmatched copies of it remain in the answer.

export type Mark = 'G' | 'Y' | '-';

export function scoreGuess(guess: string, answer: string): Mark[] {
  const marks: Mark[] = ['-', '-', '-', '-', '-'];
  const remaining = new Map<string, number>();
  for (let i = 0; i < 5; i++) {
    const a = answer[i] as string;
    if (guess[i] === a) marks[i] = 'G';
    else remaining.set(a, (remaining.get(a) ?? 0) + 1);
  }
  for (let i = 0; i < 5; i++) {
    if (marks[i] === 'G') continue;
    const g = guess[i] as string;
    const left = remaining.get(g) ?? 0;
    if (left > 0) {
      marks[i] = 'Y';
      remaining.set(g, left - 1);
    }
  }
  return marks;
}
