// Where the shipped task set lives: a module of its own so the CLI's task commands can name it
// without loading the code env.
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The task set shipped with sandgym. */
export const SHIPPED_TASKS_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../tasks');
