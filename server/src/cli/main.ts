// sandgym CLI entry (run by bin/sandgym.js through tsx). The logic lives in run.ts so tests can
// call main() in-process.
import { main } from './run.js';

process.exitCode = await main(process.argv.slice(2));
