// JavaScript/TypeScript mutants from Stryker's instrumenter (@stryker-mutator/instrumenter): Stryker
// finds the mutants and their replacement code; each is applied alone to a copy of the source here,
// because the gate runs every mutant through the real grading path, not Stryker's test runner.
import { MutationToolError, type RawMutant } from './mutants.js';

interface StrykerPosition {
  line: number;
  column: number;
}
interface StrykerMutant {
  fileName: string;
  mutatorName: string;
  replacement: string;
  location: { start: StrykerPosition; end: StrykerPosition };
  status?: string;
}
interface InstrumenterModule {
  Instrumenter: new (
    logger: unknown,
  ) => { instrument(files: { name: string; content: string; mutate: true }[], options: Record<string, unknown>): Promise<{ mutants: StrykerMutant[] }> };
}

const quiet = () => false;
const noop = () => {};
const LOGGER = {
  isTraceEnabled: quiet,
  isDebugEnabled: quiet,
  isInfoEnabled: quiet,
  isWarnEnabled: quiet,
  isErrorEnabled: quiet,
  isFatalEnabled: quiet,
  trace: noop,
  debug: noop,
  info: noop,
  warn: noop,
  error: noop,
  fatal: noop,
};

/** Offset of a Stryker position (0-based line and column) in source. */
function offsetOf(lineStarts: number[], p: StrykerPosition): number {
  return (lineStarts[p.line] ?? 0) + p.column;
}

export async function javascriptMutants(files: { path: string; source: string }[]): Promise<{ version: string; mutants: RawMutant[] }> {
  let mod: InstrumenterModule;
  let version = 'unknown';
  try {
    mod = (await import('@stryker-mutator/instrumenter')) as unknown as InstrumenterModule;
    const { createRequire } = await import('node:module');
    version = (createRequire(import.meta.url)('@stryker-mutator/instrumenter/package.json') as { version: string }).version;
  } catch (err) {
    throw new MutationToolError(
      `JavaScript mutants need @stryker-mutator/instrumenter (npm install --save-dev @stryker-mutator/instrumenter@9): ${(err as Error).message}`,
      'stryker',
    );
  }
  const instrumenter = new mod.Instrumenter(LOGGER);
  const out: RawMutant[] = [];
  for (const f of files) {
    let res: { mutants: StrykerMutant[] };
    try {
      res = await instrumenter.instrument([{ name: f.path, content: f.source, mutate: true }], {
        plugins: null,
        excludedMutations: [],
        ignorers: [],
        noHeader: true,
      });
    } catch (err) {
      throw new MutationToolError(`Stryker cannot parse ${f.path}: ${(err as Error).message}`, 'stryker');
    }
    const lineStarts = [0];
    for (let i = 0; i < f.source.length; i++) if (f.source[i] === '\n') lineStarts.push(i + 1);
    for (const m of res.mutants) {
      if (m.status === 'Ignored') continue;
      const a = offsetOf(lineStarts, m.location.start);
      const b = offsetOf(lineStarts, m.location.end);
      out.push({ path: f.path, operator: m.mutatorName, source: f.source.slice(0, a) + m.replacement + f.source.slice(b) });
    }
  }
  return { version, mutants: out };
}
