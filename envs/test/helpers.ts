import type { EnvContext } from '../src/api.js';

const quiet = () => undefined;

export function testCtx(): EnvContext {
  return { signal: new AbortController().signal, logger: { debug: quiet, info: quiet, warn: quiet, error: quiet } };
}
