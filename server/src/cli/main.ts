// sandgym CLI entry (run by bin/sandgym.js). The logic lives in run.ts so tests can call main()
// in-process. `sandgym`, `--help` and `--version` are answered before run.ts (and with it the
// subcommands' error types, ajv and the protocol schemas) is loaded.
import { quickAnswer } from './help.js';

const argv = process.argv.slice(2);
const quick = quickAnswer(argv);
let code: number;
if (quick) {
  process.stdout.write(quick.text);
  code = quick.code;
} else {
  code = await (await import('./run.js')).main(argv);
}
// Exit once the output is flushed rather than when the event loop drains: a command that failed
// after opening sockets, timers or sandbox pools (serve on a port in use) must not hang its caller.
// (`serve` itself never gets here while it is listening: its promise stays pending.)
process.stdout.write('', () => process.stderr.write('', () => process.exit(code)));
