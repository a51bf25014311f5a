// Built-in envs: registered on every server. shell-v0 needs a sandbox driver (`--driver`); on a
// server without one, its make answers UNSUPPORTED.
import type { EnvDefinition } from '../api.js';
import { calculatorToolsEnv } from './calculator-tools.js';
import { mathEnv } from './math.js';
import { shellEnv } from './shell/shell-env.js';
import { wordleEnv } from './wordle.js';

export const builtinEnvs: EnvDefinition[] = [mathEnv, wordleEnv, calculatorToolsEnv, shellEnv];
