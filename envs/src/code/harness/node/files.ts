// The node harness's files as the grader ships them into the judge's grading dir (grader-plan.ts): read once at
// startup, hashed into GRADER_VERSION. A module of its own so grader-plan.ts can import it without a cycle.
import { readFileSync } from 'node:fs';

const read = (name: string): string => readFileSync(new URL(`./${name}`, import.meta.url), 'utf8');

/** <root>/node_modules/sandgym-harness/<name>: the judge module, its driver thread, the worker source, the agent reporter. */
export const NODE_HARNESS_FILES: Readonly<Record<'harness.mjs' | 'driver.mjs' | 'worker.mjs' | 'agent-reporter.mjs', string>> = {
  'harness.mjs': read('harness.mjs'),
  'driver.mjs': read('driver.mjs'),
  'worker.mjs': read('worker.mjs'),
  'agent-reporter.mjs': read('agent-reporter.mjs'),
};

export const NODE_HARNESS_PACKAGE = `${JSON.stringify({ name: 'sandgym-harness', private: true, type: 'module', exports: './harness.mjs' })}\n`;
