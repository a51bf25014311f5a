// The exit-code table of docs/CLI.md, subcommand by subcommand, in-process through main(): --help,
// unknown options, missing and bad values, unknown and missing subcommands, bad input files,
// unreachable servers, and the one printed shape of a usage error.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { UsageError } from '../src/cli/args.js';
import { EXIT, exitCodeFor } from '../src/cli/exit-codes.js';
import { HELP, main, report } from '../src/cli/run.js';

const TASKS = fileURLToPath(new URL('../../envs/tasks', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'sandgym-exit-'));
/** Nothing listens on the discard port of loopback: connecting is refused at once. */
const DEAD_URL = 'ws://127.0.0.1:9/v2/ws';

async function run(argv: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(argv, { out: (s) => void out.push(s), err: (s) => void err.push(s) });
  return { code, out: out.join(''), err: err.join('') };
}

/** Every subcommand as typed, with the arguments it needs to get as far as option checks. */
const COMMANDS: [command: string, args: string[]][] = [
  ['serve', []],
  ['envs', []],
  ['check', ['x-v0', '--url', DEAD_URL]],
  ['images build', []],
  ['images list', []],
  ['tasks list', [TASKS]],
  ['tasks check', [TASKS]],
  ['tasks validate', [TASKS]],
  ['play', ['x-v0']],
  ['replay', ['archive.jsonl.gz']],
  ['rescore', ['archive.jsonl.gz']],
  ['report', ['archive.jsonl.gz']],
];

const argvOf = (command: string, args: string[], ...more: string[]) => [...command.split(' '), ...args, ...more];

function expectUsage(r: { code: number; out: string; err: string }, command: string, message: RegExp) {
  expect(r.code).toBe(EXIT.USAGE);
  expect(r.out).toBe('');
  const [first, hint, end] = r.err.split('\n');
  expect(first).toMatch(new RegExp(`^sandgym ${command}: `));
  expect(first).toMatch(message);
  expect(hint).toBe(`Run "sandgym ${command} --help" for usage.`);
  expect(end).toBe('');
}

describe('every subcommand', () => {
  it.each(COMMANDS)('%s --help prints its usage on stdout and exits 0', async (command, args) => {
    for (const flag of ['--help', '-h']) {
      const r = await run(argvOf(command, args, flag));
      expect(r.code).toBe(EXIT.OK);
      expect(r.out).toMatch(new RegExp(`^Usage: sandgym ${command.split(' ')[0]}`));
      expect(r.err).toBe('');
    }
  });

  it.each(COMMANDS)('%s refuses an unknown option (exit 2)', async (command, args) => {
    expectUsage(await run(argvOf(command, args, '--no-such-option')), command, /unknown option '--no-such-option'$/);
    expectUsage(await run(argvOf(command, args, '-Z')), command, /unknown option '-Z'$/);
  });
});

describe('missing values (exit 2)', () => {
  it.each([
    ['serve', [], '--port'],
    ['envs', [], '--url'],
    ['check', ['x-v0', '--url', DEAD_URL], '--seed'],
    ['images build', [], '--only'],
    ['tasks check', [TASKS], '--threshold'],
    ['tasks validate', [TASKS], '--driver'],
    ['play', ['x-v0'], '--seed'],
  ] as [string, string[], string][])('%s %s', async (command, args, flag) => {
    // Last on the line, or followed by another option: either way the value is missing.
    expectUsage(await run(argvOf(command, args, flag)), command, new RegExp(`option '${flag}' needs a value$`));
    expectUsage(await run(argvOf(command, args, flag, '--help')), command, new RegExp(`option '${flag}' needs a value$`));
  });

  it('a flag given a value is refused too', async () => {
    expectUsage(await run(['envs', '--json=yes']), 'envs', /option '--json' takes no value$/);
  });
});

describe('bad values (exit 2)', () => {
  it.each([
    ['serve', ['--port', '65536'], /--port must be an integer in 0\.\.65535, got '65536'/],
    ['serve', ['--splits', 'train,test'], /--splits must be a comma-separated list of distinct values from train, eval/],
    ['envs', ['--url', 'http://x'], /--url must be a ws:\/\/ or wss:\/\/ URL/],
    ['check', ['x-v0', '--url', DEAD_URL, '--encoding', 'xml'], /--encoding must be one of json, msgpack, got 'xml'/],
    ['check', ['x-v0', '--url', DEAD_URL, '--kwargs', '[1]'], /--kwargs must be a JSON object/],
    ['check', ['x-v0', '--url', DEAD_URL, '--timeout-ms', '0'], /--timeout-ms must be an integer in 1\.\./],
    ['images build', ['--only', 'nope'], /--only: no image named 'nope'/],
    ['tasks check', [TASKS, '--threshold', '0'], /--threshold must be a number in \(0, 1\]/],
    ['tasks validate', [TASKS, '--concurrency', '99'], /--concurrency must be an integer in 1\.\.64/],
    ['play', ['x-v0', '--options', '{'], /--options must be a JSON object/],
  ] as [string, string[], RegExp][])('%s %j', async (command, args, message) => {
    expectUsage(await run(argvOf(command, args)), command, message);
  });

  it('positionals: missing, extra, or none allowed', async () => {
    expectUsage(await run(['check', '--url', DEAD_URL]), 'check', /missing <env_id>$/);
    expectUsage(await run(['play', 'a-v0', 'b-v0']), 'play', /unexpected argument 'b-v0' \(expected <env_id>\)$/);
    expectUsage(await run(['serve', 'now']), 'serve', /takes no positional arguments \(got 'now'\)$/);
    expectUsage(await run(['envs', '--', 'x']), 'envs', /'--' is not accepted here$/);
  });
});

describe('commands and subcommands', () => {
  it('an unknown command or subcommand exits 2', async () => {
    const top = await run(['frobnicate']);
    expect(top).toEqual({ code: EXIT.USAGE, out: '', err: `sandgym: unknown command 'frobnicate'\nRun "sandgym --help" for usage.\n` });
    expectUsage(await run(['tasks', 'frobnicate']), 'tasks', /unknown subcommand 'frobnicate' \(expected list, check, validate, import, build-envs, stats\)$/);
    expectUsage(await run(['images', 'pull']), 'images', /unknown subcommand 'pull' \(expected build, list\)$/);
    expectUsage(await run(['images', '--force']), 'images', /expected a subcommand \(build, list\) before options, got '--force'$/);
  });

  it('without a (sub)command the help goes to stdout and the exit code is 2; with help, 0', async () => {
    for (const argv of [[], ['tasks'], ['images']]) {
      const r = await run(argv);
      expect(r.code, argv.join(' ')).toBe(EXIT.USAGE);
      expect(r.out).toMatch(/^Usage: sandgym/);
    }
    for (const argv of [['help'], ['--help'], ['tasks', 'help'], ['images', '-h']]) expect((await run(argv)).code, argv.join(' ')).toBe(EXIT.OK);
    expect((await run(['--help'])).out).toBe(HELP + '\n');
    expect(HELP).toContain('Exit codes: 0 ok, 1 failed, 2 usage error, 3 bad input file or module, 4 unavailable, 5 internal error');
  });
});

describe('the other rows of the table', () => {
  it('3: a file or module named on the command line cannot be used', async () => {
    const bad = join(dir, 'bad.json');
    writeFileSync(bad, '{"prot": 1}');
    const cfg = await run(['serve', '--config', bad]);
    expect(cfg.code).toBe(EXIT.INPUT);
    expect(cfg.err).toMatch(/^sandgym serve: config file .*bad\.json: unknown key 'prot'/);
    const mod = await run(['envs', '--env-module', join(dir, 'no-such-module.ts')]);
    expect(mod.code).toBe(EXIT.INPUT);
    expect(mod.err).toMatch(/^sandgym envs: env module .*no-such-module\.ts: /);
  });

  it('4: the server at --url cannot be reached', async () => {
    const envs = await run(['envs', '--url', DEAD_URL]);
    expect(envs.code).toBe(EXIT.UNAVAILABLE);
    expect(envs.err).toMatch(/^sandgym envs: cannot connect to ws:\/\/127\.0\.0\.1:9\/v2\/ws: /);
    const check = await run(['check', 'x-v0', '--url', DEAD_URL]);
    expect(check.code).toBe(EXIT.UNAVAILABLE);
    expect(check.out).toMatch(/FAIL\s+connect/);
  });

  it('5: an unexpected error is an internal error, printed with its stack', () => {
    const err: string[] = [];
    const bug = new TypeError('undefined is not a function');
    expect(report(bug, 'serve', { out: () => undefined, err: (s) => void err.push(s) })).toBe(EXIT.INTERNAL);
    expect(err.join('')).toMatch(/^sandgym serve: internal error: TypeError: undefined is not a function\n {4}at /);
  });

  it('errors are told apart by type, not message', () => {
    expect(exitCodeFor(new UsageError('x'))).toBe(EXIT.USAGE);
    expect(exitCodeFor(new Error('unknown option'))).toBe(EXIT.INTERNAL);
    expect(new Set(Object.values(EXIT)).size).toBe(Object.keys(EXIT).length);
  });
});
