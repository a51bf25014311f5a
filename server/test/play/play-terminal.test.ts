// `sandgym play` as a person uses it: the real CLI (bin/sandgym.js) in a real terminal (tmux), keys
// typed, the screen read back. Plus the same binary with piped stdin and its exit codes.
// tmux missing => skip with the reason, except when SANDGYM_REQUIRE_BROWSER=1 or SANDGYM_REQUIRE_TMUX=1
// (.ci/run installs tmux with chromium for these interactive-debugging tests).
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { connect } from '../../../clients/ts/src/index.js';
import { buildApp, type SandgymApp } from '../../src/app.js';
import { fromJsonl } from '../../src/trajectory/trajectory.js';
import { Tmux, tmuxUnavailable } from './tmux.js';

const BIN = resolve(fileURLToPath(new URL('../../../bin/sandgym.js', import.meta.url)));
const why = tmuxUnavailable();
const required = process.env.SANDGYM_REQUIRE_BROWSER === '1' || process.env.SANDGYM_REQUIRE_TMUX === '1';

if (why && required) {
  describe('sandgym play in a terminal', () => {
    it('has tmux to run in', () => {
      throw new Error(`SANDGYM_REQUIRE_BROWSER/TMUX=1 but ${why}`);
    });
  });
}

let dir: string;
let sg: SandgymApp;
const TOKEN = 'play-test-token';

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sandgym-play-'));
  sg = await buildApp({ fixtures: true, tokens: [TOKEN], log_level: 'error', host: '127.0.0.1', port: 0 });
  await sg.app.listen({ host: '127.0.0.1', port: 0 });
});

afterAll(async () => {
  await sg?.app.close();
  rmSync(dir, { recursive: true, force: true });
});

// Colour on (a TTY, NO_COLOR unset) unless a test says otherwise; history in a temp file.
const baseEnv = (): Record<string, string | null> => ({ NO_COLOR: null, FORCE_COLOR: null, SANDGYM_HISTORY_FILE: join(dir, 'history') });

describe.skipIf(why !== null)(`sandgym play in a terminal (tmux)${why ? ` (skipped: ${why})` : ''}`, () => {
  let term: Tmux;

  afterEach(() => term?.kill());

  it('plays wordle-v0 to the end twice (solved, then lost) with colour, history and Ctrl-D', async () => {
    term = new Tmux();
    term.start(['node', BIN, 'play', 'wordle-v0', '--seed', '7', '--options', '{"word":"plant"}'], baseEnv());
    let screen = await term.waitFor(/sandgym> $/m);
    expect(screen).toMatch(/^in-process server on ws:\/\/127\.0\.0\.1:\d+\/v2\/ws/m);
    expect(screen).toContain('wordle-v0 · Wordle: guess a seeded 5-letter word');
    expect(screen).toContain('rubric: solve ×1, information ×0.1, invalid_guess ×-0.1');
    expect(screen).toContain('── reset seed 7 options {"word":"plant"} ');
    expect(screen).toContain('Guesses left: 6');

    term.line('crane');
    screen = await term.waitFor('── step 1 ');
    expect(screen).toContain('sandgym> crane\n');
    expect(screen).toContain('  crane -> - - G G -\n  Guesses left: 5');
    expect(screen).toContain('reward 0.3   return 0.3   terminated no   truncated no');
    expect(screen).toContain('  components solve 0 · information 0.3 · invalid_guess 0');

    term.line('xyzzy');
    screen = await term.waitFor('── step 2 ');
    expect(screen).toContain('  xyzzy -> not in word list');
    expect(screen).toContain('reward -0.1   return 0.2');
    expect(screen).toContain('components solve 0 · information 0 · invalid_guess -0.1');

    term.line('slate');
    await term.waitFor('── step 3 ');
    term.line('plant');
    screen = await term.waitFor('episode over');
    expect(screen).toContain('  plant -> G G G G G\n  Solved in 4 guesses!');
    expect(screen).toContain('reward 1.25   return 1.65   terminated yes   truncated no');
    expect(screen).toContain('info {"guesses_left":2,"feedback":"GGGGG","answer":"plant"}');
    expect(screen).toContain('episode over (terminated) after 4 steps, return 1.65; :reset for a new one');

    // Colour on a terminal: the reward is bold green, the end notice yellow.
    const raw = term.capture(true);
    expect(raw).toMatch(/\x1b\[[0-9;]*1[;m]/); // bold
    expect(raw).toMatch(/\x1b\[[0-9;]*3[23][;m]/); // green / yellow

    term.line(':history');
    screen = await term.waitFor('return 1.65 over 4 steps');
    expect(screen).toContain('    4  reward    1.25  "plant" [terminated]');

    // readline history: Up twice from an empty prompt recalls ':history'... after ':reset 8', recall ':reset 8'.
    term.line(':reset 8');
    await term.waitFor('── reset seed 8 ');
    term.press('Up', 'Up');
    term.press('Enter');
    await term.waitFor('episode of wordle-v0, seed 8');

    for (let i = 1; i <= 6; i++) {
      term.line('zzzzz');
      await term.waitFor(`── step ${i} `, { count: i <= 4 ? 2 : 1 });
    }
    // Six wrong guesses lose the game: a rule of the game, so terminated.
    screen = await term.waitFor('episode over (terminated)');
    expect(screen).toContain('Out of guesses. The word was plant.');
    expect(screen).toContain('terminated yes   truncated no');

    term.press('C-d');
    expect(await term.waitExit()).toBe(0);
    expect(readFileSync(join(dir, 'history'), 'utf8')).toContain('crane\nxyzzy\nslate\nplant\n:history\n:reset 8\n');
  });

  it('plays calculator-tools-v0 on a token-protected server with tool shorthand, errors, :save and :replay', async () => {
    // The answer for seed 3, learned the way a trainer would: submit something and read info.expected.
    const client = await connect(sg.url(), { token: TOKEN });
    const env = await client.make('calculator-tools-v0');
    await env.reset({ seed: 3 });
    const expected = (await env.step({ name: 'submit', arguments: { answer: -1 } })).info.expected as number;
    await client.close();

    term = new Tmux();
    const saved = join(dir, 'calc.jsonl');
    term.start(['node', BIN, 'play', 'calculator-tools-v0', '--url', sg.url(), '--token', TOKEN, '--seed', '3'], { ...baseEnv(), NO_COLOR: '1' });
    let screen = await term.waitFor(/sandgym> $/m);
    expect(screen).not.toContain('in-process server');
    expect(screen).toMatch(/tools:\n {2}calculate <expression> {2}Evaluate an arithmetic expression/);
    expect(screen).toMatch(/ {6}expression: string\n {2}submit <answer> {2}Submit the final numeric answer\. Ends the episode\.\n {6}answer: number/);
    expect(screen).toContain('── reset seed 3 ');

    term.line('calculate (2 + 3) * 4');
    screen = await term.waitFor('── step 1 ');
    expect(screen).toContain('action {"name":"calculate","arguments":{"expression":"(2 + 3) * 4"}}\nobservation:\n  20\n');

    term.line('submit abc');
    await term.waitFor("cannot parse action: submit.answer expects number, got 'abc'");
    term.line('launch missiles');
    await term.waitFor("cannot parse action: unknown tool 'launch'; tools: calculate, submit");
    term.line('{"name": "submit", "arguments": {"answer": "x"}}');
    screen = await term.waitFor('error INVALID_ACTION');
    expect(screen).toContain('the action does not fit the action space; the episode continues, try again');

    term.line(`submit ${expected}`);
    screen = await term.waitFor('episode over');
    expect(screen).toContain('observation:\n  Correct.\n');
    expect(screen).toContain('reward 1   return 1   terminated yes   truncated no');
    expect(screen).toContain('components correctness 1');

    term.line(`:save ${saved}`);
    await term.waitFor(`saved 2 steps to ${saved}`);
    term.line(`:replay ${saved}`);
    screen = await term.waitFor('every step matches');
    expect(screen).toMatch(/step {3}2 {2}reward 1 {2}same/);

    expect(term.capture(true)).not.toMatch(/\x1b\[3\dm/);
    term.line(':quit');
    expect(await term.waitExit()).toBe(0);
    const t = fromJsonl(readFileSync(saved, 'utf8'));
    expect(t.reset).toMatchObject({ env_id: 'calculator-tools-v0', seed: 3 });
    expect(t.steps.map((s) => s.reward)).toEqual([0, 1]);
  });

  it('takes a heredoc over msgpack with an in-process fixture server', async () => {
    term = new Tmux();
    term.start(['node', BIN, 'play', 'test/tools-v0', '--fixtures', '--encoding', 'msgpack', '--seed', '1'], baseEnv());
    await term.waitFor(/sandgym> $/m);
    term.line('echo <<EOF');
    await term.waitFor(/^\.\.\. $/m);
    term.line('  indented line');
    term.line('second "quoted" line');
    term.line('EOF');
    const screen = await term.waitFor('── step 1 ');
    expect(screen).toContain('observation:\n    indented line\n  second "quoted" line\n');
    term.line('finish 42');
    await term.waitFor('reward 1   return 1   terminated yes');
    term.press('C-c');
    await term.waitFor('(press Ctrl-C again, Ctrl-D or type :quit to leave)');
    term.press('C-c');
    expect(await term.waitExit()).toBe(0);
  });
});

/** Runs the CLI with piped stdin; resolves with its exit code and output. */
function runPiped(args: string[], input: string, env: Record<string, string> = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn('node', [BIN, 'play', ...args], { env: { ...process.env, SANDGYM_HISTORY_FILE: '', ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolvePromise({ code, stdout, stderr });
    });
    child.stdin.end(input);
  });
}

describe('sandgym play with piped input', () => {
  it('prints plain output without prompts and exits 0 at end of input', async () => {
    const r = await runPiped(['test/counter-v0', '--url', sg.url(), '--token', TOKEN, '--seed', '1'], '1\n1\n1\n:history\n');
    expect(r.code).toBe(0);
    expect(r.stdout).not.toContain('sandgym>');
    expect(r.stdout).not.toContain('\x1b[');
    expect(r.stdout).toContain('episode over (terminated) after 3 steps, return 3');
    expect(r.stdout).toContain('  return 3 over 3 steps');
  });

  it('exits 4 when the server refuses the token, 1 on an unknown env, 2 on bad usage', async () => {
    // Independent processes: run them side by side (each pays node + tsx startup).
    const [wrong, unknown, usage, badServe, help] = await Promise.all([
      runPiped(['test/counter-v0', '--url', sg.url(), '--token', 'nope'], ''),
      runPiped(['nope-v0', '--url', sg.url(), '--token', TOKEN], ''),
      runPiped(['--seed', 'x', 'wordle-v0'], ''),
      runPiped(['wordle-v0', '--', '--no-such-serve-flag'], ''),
      runPiped(['--help'], ''),
    ]);
    expect(wrong.code).toBe(4);
    expect(wrong.stderr).toContain(`sandgym play: cannot connect to ${sg.url()}`);
    expect(wrong.stderr).toContain('error UNAUTHORIZED');
    expect(wrong.stderr).toContain('pass --token');

    expect(unknown.code).toBe(1);
    expect(unknown.stdout).toContain('error UNKNOWN_ENV');

    expect(usage.code).toBe(2);
    expect(usage.stderr).toBe(`sandgym play: --seed must be an integer in 0..2^53-1, got 'x'\nRun "sandgym play --help" for usage.\n`);

    expect(badServe.code).toBe(2);
    // Options after -- belong to the in-process server: the hint names `sandgym serve --help`.
    expect(badServe.stderr).toBe(`sandgym serve: unknown option '--no-such-serve-flag'\nRun "sandgym serve --help" for usage.\n`);

    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Usage: sandgym play <env_id> [options]');
  });
});
