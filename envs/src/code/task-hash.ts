// Content identity of a task: two tasks with the same normalised instruction and the same hidden
// tests are the same task whatever their ids, which is what leakage checks must catch.
import { createHash } from 'node:crypto';

export function sha256Hex(data: Uint8Array | string): string {
  return createHash('sha256').update(data).digest('hex');
}

/** NFC, lower case, whitespace runs collapsed: cosmetic edits must not make a copy look new. */
export function normaliseInstruction(text: string): string {
  return text.normalize('NFC').toLowerCase().replace(/\s+/g, ' ').trim();
}

/** Line endings and trailing whitespace do not change what a test checks. */
export function normaliseTestText(content: Uint8Array): string {
  const text = Buffer.from(content).toString('utf8');
  return text
    .replace(/\r\n?/g, '\n')
    .split('\n')
    .map((l) => l.replace(/[ \t]+$/, ''))
    .join('\n')
    .trim();
}

/** sha256 over the normalised instruction and each test file (path-independent, order-independent). */
export function taskContentHash(instruction: string, tests: readonly { content: Uint8Array }[]): string {
  const testHashes = tests.map((t) => sha256Hex(normaliseTestText(t.content))).sort();
  return sha256Hex(JSON.stringify({ instruction: normaliseInstruction(instruction), tests: testHashes }));
}
