// Built-in envs: registered on every server. They need no sandbox.
import type { EnvDefinition } from '../api.js';
import { calculatorToolsEnv } from './calculator-tools.js';
import { mathEnv } from './math.js';
import { wordleEnv } from './wordle.js';

export const builtinEnvs: EnvDefinition[] = [mathEnv, wordleEnv, calculatorToolsEnv];
