// PlaySession (the REPL core) against a real server over a real socket, through the real TS client.
// Only the file system is swapped for a map, which is what the PlayFiles seam is for.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type SandgymClient } from '../../../clients/ts/src/index.js';
import { mulberry32, sampleSpace, validateEnvSpec, type EnvSpec } from '../../../protocol/src/index.js';
import { buildApp, type SandgymApp } from '../../src/app.js';
import type { PlayBackend, PlayFiles } from '../../src/play/backend.js';
import { UsageError } from '../../src/cli/args.js';
import { parsePlayArgs } from '../../src/cli/play.js';
import { CONTINUATION_PROMPT, PlaySession, PROMPT, type PlaySessionOptions } from '../../src/play/session.js';
import { fromJsonl, parseSeed, toJsonl } from '../../src/trajectory/trajectory.js';

class MemFiles implements PlayFiles {
  readonly files = new Map<string, string>();
  async readText(path: string): Promise<string> {
    const t = this.files.get(path);
    if (t === undefined) throw Object.assign(new Error(`ENOENT: no such file or directory, open '${path}'`), { code: 'ENOENT' });
    return t;
  }
  async writeText(path: string, text: string): Promise<void> {
    if (path.startsWith('/readonly/')) throw new Error(`EACCES: permission denied, open '${path}'`);
    this.files.set(path, text);
  }
}

let sg: SandgymApp;
let client: SandgymClient;

beforeAll(async () => {
  // form-env.ts: a task env with kwargs, every tool parameter kind and a negative rubric weight.
  const formEnv = new URL('../inspect/form-env.ts', import.meta.url).pathname;
  sg = await buildApp({ fixtures: true, env_modules: [formEnv], log_level: 'error', host: '127.0.0.1', port: 0 });
  await sg.app.listen({ host: '127.0.0.1', port: 0 });
  client = await connect(sg.url());
});

afterAll(async () => {
  await client?.close();
  await sg?.app.close();
});

function backend(): PlayBackend {
  return {
    async make(envId, kwargs) {
      const h = await client.make(envId, kwargs);
      return { spec: h.spec, reset: (a) => h.reset(a), step: (a) => h.step(a), close: () => h.close() };
    },
  };
}

async function started(envId: string, extra: Partial<PlaySessionOptions> = {}): Promise<{ s: PlaySession; files: MemFiles; out: string }> {
  const files = new MemFiles();
  const s = new PlaySession({ backend: backend(), files, envId, seed: 1, ...extra });
  const r = await s.start();
  expect(r.ok).toBe(true);
  return { s, files, out: r.output };
}

async function line(s: PlaySession, text: string): Promise<string> {
  const r = await s.handleLine(text);
  expect(r.quit).toBe(false);
  return r.output;
}

describe('PlaySession on a tool env', () => {
  it('shows the spec, the tools with their parameters and the first observation', async () => {
    const { s, out } = await started('test/tools-v0');
    expect(out).toContain('test/tools-v0 · Fixture: tool calls echo, add and finish');
    expect(out).toContain('action: tool_call (3 tools)');
    expect(out).toContain('max steps: 10');
    expect(out).toMatch(/tools:\n {2}echo <text> {2}Echo the text back\.\n {6}text: string\n/);
    expect(out).toContain('add <a> <b>');
    expect(out).toContain('── reset seed 1 ');
    expect(out).toMatch(/observation:\n {2}ready/);
    expect(out).not.toContain('\x1b[');
    expect(s.prompt).toBe(PROMPT);
    await s.close();
  });

  it('plays an episode with shorthand tool calls and reports reward, flags and the end', async () => {
    const { s } = await started('test/tools-v0');
    expect(await line(s, 'echo hello  world')).toMatch(
      /── step 1 ─+\naction \{"name":"echo","arguments":\{"text":"hello  world"\}\}\nobservation:\n {2}hello {2}world\nreward 0 {3}return 0 {3}terminated no {3}truncated no/,
    );
    expect(await line(s, 'add 2 3.5')).toContain('observation:\n  5.5\n');
    expect(await line(s, 'add {"a": -1, "b": 1}')).toContain('observation:\n  0\n');
    const end = await line(s, 'finish 42');
    expect(end).toContain('reward 1   return 1   terminated yes   truncated no');
    expect(end).toContain('episode over (terminated) after 4 steps, return 1; :reset for a new one');
    // After the end the server says RESET_NEEDED; the REPL explains it.
    const after = await line(s, 'echo again');
    expect(after).toContain('error RESET_NEEDED:');
    expect(after).toContain('type :reset');
    expect(await line(s, ':history')).toBe(
      [
        'episode of test/tools-v0, seed 1',
        '    1  reward       0  {"name":"echo","arguments":{"text":"hello  world"}}',
        '    2  reward       0  {"name":"add","arguments":{"a":2,"b":3.5}}',
        '    3  reward       0  {"name":"add","arguments":{"a":-1,"b":1}}',
        '    4  reward       1  {"name":"finish","arguments":{"answer":42}} [terminated]',
        '  return 1 over 4 steps',
      ].join('\n'),
    );
    expect(await line(s, ':reset 9')).toContain('── reset seed 9 ');
    expect(await line(s, ':history')).toContain('no steps yet');
    await s.close();
  });

  it('collects heredoc lines into the last argument', async () => {
    const { s } = await started('test/tools-v0');
    expect(await line(s, 'echo <<EOF')).toContain('finish with a line containing only EOF');
    expect(s.prompt).toBe(CONTINUATION_PROMPT);
    expect(await line(s, 'first line')).toBe('');
    expect(await line(s, '  :not a command, EOF inside')).toBe('');
    const out = await line(s, 'EOF');
    expect(s.prompt).toBe(PROMPT);
    expect(out).toContain('observation:\n  first line\n    :not a command, EOF inside\n');
    await s.close();
  });

  it('explains unparseable input locally and protocol errors from the server, and keeps going', async () => {
    const { s } = await started('test/tools-v0');
    expect(await line(s, 'rm -rf /')).toBe("cannot parse action: unknown tool 'rm'; tools: echo, add, finish (or type a raw JSON action)");
    expect(await line(s, 'add 1')).toBe("cannot parse action: missing 'b' for add; usage: add <a> <b>");
    expect(await line(s, 'add one two')).toBe("cannot parse action: add.a expects number, got 'one'");
    expect(await line(s, '{"name": "echo"')).toMatch(/^cannot parse action: not valid JSON for a tool_call action/);
    const invalid = await line(s, '{"name": "echo", "arguments": {"text": 5}}');
    expect(invalid).toMatch(
      /^error INVALID_ACTION: .*\n {2}details \{"path":"\/arguments\/text".*\n {2}the action does not fit the action space; the episode continues, try again$/,
    );
    expect(await line(s, 'echo still alive')).toContain('observation:\n  still alive');
    expect(await line(s, ':reset banana')).toBe(":reset takes an integer seed between 0 and 2^53-1, got 'banana'");
    expect(await line(s, ':reset 9007199254740992')).toContain(':reset takes an integer seed');
    expect(await line(s, ':wat')).toMatch(/^unknown command ':wat'\ncommands:/);
    expect(await line(s, '')).toBe('');
    expect(await line(s, ':spec')).toContain('tools:');
    expect(JSON.parse(await line(s, ':spec json'))).toMatchObject({ id: 'test/tools-v0', max_episode_steps: 10 });
    expect(await line(s, ':help')).toContain(':replay FILE.jsonl');
    expect(await s.handleLine(':quit')).toEqual({ output: 'bye', quit: true });
    await s.close();
  });
});

describe('PlaySession errors and other spaces', () => {
  it('reports an env crash (ENV_ERROR) and the poisoned session until reset', async () => {
    const { s } = await started('test/crash-v0');
    expect(await line(s, '1')).toMatch(/^error ENV_ERROR: .*\n(.*\n)? {2}the env raised an error; the session needs :reset$/);
    expect(await line(s, '0')).toContain('error RESET_NEEDED');
    expect(await line(s, ':reset')).toMatch(/── reset seed \d+ /);
    expect(await line(s, '0')).toContain('reward 0');
    await s.close();
  });

  it('reports a reset that fails with SANDBOX_ERROR as infrastructure, not a score', async () => {
    const { out, s } = await started('test/sandbox-fail-v0');
    expect(out).toContain('error SANDBOX_ERROR: ');
    expect(out).toContain('infrastructure, not a reward of 0');
    await s.close();
  });

  it('fails to start on an unknown env with the server message', async () => {
    const s = new PlaySession({ backend: backend(), files: new MemFiles(), envId: 'no-such-env' });
    const r = await s.start();
    expect(r.ok).toBe(false);
    expect(r.output).toMatch(/^error UNKNOWN_ENV: .*no-such-env/);
    expect(r.output).toContain('`sandgym envs` lists them');
  });

  it('sends the raw line for text envs, numbers for discrete and JSON for dict spaces', async () => {
    const text = await started('wordle-v0', { seed: 3 });
    expect(text.out).toContain('action: text (max 256 chars)');
    expect(await line(text.s, 'crane')).toContain('action "crane"');
    expect(await line(text.s, '::colon')).toContain('action ":colon"');
    await text.s.close();

    const counter = await started('test/counter-v0');
    expect(await line(counter.s, '1')).toContain('reward 1');
    expect(await line(counter.s, 'two')).toMatch(/^cannot parse action: not valid JSON for a discrete action/);
    await counter.s.close();

    const dict = await started('test/dict-v0');
    const out = await line(dict.s, '{"move": [0.5, 0], "say": "hi"}');
    expect(out).toContain('observation:\n  {"position":[0.5,0],"label":"hi"}');
    expect(out).toContain('reward 1');
    await dict.s.close();
  });

  it('shows reward components and info for rubric envs', async () => {
    const { s } = await started('wordle-v0', { seed: 3 });
    const out = await line(s, 'zzzzz');
    expect(out).toMatch(/reward -0\.1 .*\n {2}components solve 0 · information 0 · invalid_guess -0\.1\ninfo \{"guesses_left":5/);
    await s.close();
  });

  it('passes --task / --split / :task as reset options', async () => {
    // An env that takes task_id and split (wordle-v0 refuses reset options it does not know).
    const { s, out } = await started('inspect/forms-v0', { task: 't-1', split: 'train' });
    expect(out).toContain('── reset seed 1 options {"task_id":"t-1","split":"train"} ');
    expect(await line(s, ':task')).toBe('task_id: t-1');
    expect(await line(s, ':task t-2')).toContain('options {"task_id":"t-2","split":"train"}');
    expect(await line(s, ':split -')).toContain('options {"task_id":"t-2"}');
    expect(s.trajectory?.reset.options).toEqual({ task_id: 't-2' });
    await s.close();
  });

  it('colours output only when asked', async () => {
    const { s, out } = await started('test/counter-v0', { colour: true });
    expect(out).toContain('\x1b[1mtest/counter-v0\x1b[22m');
    expect(await line(s, '1')).toContain('\x1b[32m1\x1b[39m');
    await s.close();
  });

  it('turns a throwing backend into a message, never an exception', async () => {
    const spec: EnvSpec = {
      id: 'x',
      description: 'A backend whose step throws a string and whose close fails.',
      observation_space: { type: 'discrete', n: 2 },
      action_space: { type: 'discrete', n: 2 },
      max_episode_steps: null,
      reward_range: [0, 1],
      stochastic: false,
    };
    expect(validateEnvSpec(spec).ok).toBe(true);
    const broken: PlayBackend = {
      async make() {
        return {
          spec,
          reset: async () => ({ observation: 0, info: {} }),
          step: async () => {
            throw 'a string, not an Error';
          },
          close: async () => {
            throw new Error('close failed');
          },
        };
      },
    };
    const s = new PlaySession({ backend: broken, files: new MemFiles(), envId: 'x' });
    expect((await s.start()).ok).toBe(true);
    expect(await line(s, '1')).toBe('error ERROR: a string, not an Error');
    await s.close();
  });
});

describe('PlaySession on a task env with kwargs and rich tool parameters', () => {
  it('shows tasks and rubric, sends kwargs and task options, and fills typed parameters', async () => {
    const { s, out } = await started('inspect/forms-v0', { seed: 2, task: 't-1', split: 'eval', kwargs: { difficulty: 'easy' } });
    expect(out).toContain('rubric: progress ×1, penalty ×-0.5');
    expect(out).toContain('tasks: train 3, eval 1');
    expect(out).toContain('configure <level> <mode> [verbose] [tags] [note] [content]  Every parameter kind.');
    expect(out).toContain('      level: integer  how hard');
    expect(out).toContain('      mode: "fast" | "slow"');
    expect(out).toContain('      verbose: boolean, optional');
    expect(out).toContain('      tags: string[], optional');
    expect(out).toContain('observation:\n  {"seed":2,"options":{"task_id":"t-1","split":"eval"},"kwargs":{"difficulty":"easy"}}');
    const step = await line(s, `configure 3 slow verbose=true tags='["a", "b"]' note="two words"`);
    expect(step).toContain('observation:\n  {"level":3,"mode":"slow","verbose":true,"tags":["a","b"],"note":"two words"}');
    expect(step).toContain('components progress 0.5 · penalty -0.5');
    expect(await line(s, 'configure 3.5 fast')).toBe("cannot parse action: configure.level must be an integer, got '3.5'");
    expect(await line(s, 'done')).toContain('terminated yes');
    await s.close();
  });
});

describe('PlaySession on every env the server lists', () => {
  it('makes, resets and steps each one with a sampled action, typed the way a person would', async () => {
    const specs = await client.listEnvs();
    expect(specs.length).toBeGreaterThanOrEqual(3);
    const rng = mulberry32(7);
    for (const spec of specs) {
      // Sandbox envs need a driver this server does not have; they are covered where one runs.
      if (spec.sandbox !== undefined || spec.id === 'test/sandbox-fail-v0') continue;
      const { s, out } = await started(spec.id, { seed: 5 });
      expect(out, spec.id).toContain(`── reset seed 5`);
      const action = sampleSpace(spec.action_space, rng);
      const typed = spec.action_space.type === 'text' ? String(action).replace(/\n/g, ' ') || 'x' : JSON.stringify(action);
      const step = await line(s, typed);
      // A step or a typed protocol error, never a crash; crash-v0 may legitimately answer ENV_ERROR.
      expect(step, spec.id).toMatch(/── step 1 |^error ENV_ERROR/);
      expect(await line(s, ':spec'), spec.id).toContain(spec.id);
      await s.close();
    }
  });
});

describe('PlaySession :save and :replay', () => {
  it('saves the episode as JSONL and replays it with the same rewards', async () => {
    const { s, files } = await started('test/tools-v0', { seed: 4 });
    await line(s, 'add 40 2');
    await line(s, 'finish 42');
    expect(await line(s, ':save ep.jsonl')).toBe('saved 2 steps to ep.jsonl');
    const saved = fromJsonl(files.files.get('ep.jsonl') ?? '');
    expect(saved.reset).toMatchObject({ type: 'reset', env_id: 'test/tools-v0', seed: 4, options: {}, observation: 'ready' });
    expect(saved.steps).toEqual([
      {
        type: 'step',
        step: 1,
        action: { name: 'add', arguments: { a: 40, b: 2 } },
        observation: '42',
        reward: 0,
        terminated: false,
        truncated: false,
        info: {},
      },
      {
        type: 'step',
        step: 2,
        action: { name: 'finish', arguments: { answer: 42 } },
        observation: 'done',
        reward: 1,
        terminated: true,
        truncated: false,
        info: {},
      },
    ]);
    expect((files.files.get('ep.jsonl') ?? '').split('\n').filter(Boolean)).toHaveLength(3);

    const replay = await line(s, ':replay ep.jsonl');
    expect(replay).toContain('── replay ep.jsonl: 2 steps of test/tools-v0 ');
    expect(replay).toMatch(/step {3}1 {2}reward 0 {2}same/);
    expect(replay).toMatch(/step {3}2 {2}reward 1 {2}same/);
    expect(replay).toContain('replayed 2 steps: every step matches (return 1)');
    // The replayed episode is the current one: it can be saved again, identically.
    await line(s, ':save again.jsonl');
    expect(files.files.get('again.jsonl')).toBe(files.files.get('ep.jsonl'));
    await s.close();
  });

  it('shows where rewards differ, and switches env when the file is for another one', async () => {
    const { s, files } = await started('test/counter-v0', { seed: 2 });
    await line(s, '1');
    await line(s, '0');
    await line(s, ':save c.jsonl');
    const t = fromJsonl(files.files.get('c.jsonl') ?? '');
    t.steps[1] = { ...(t.steps[1] as (typeof t.steps)[number]), reward: 0.5 };
    files.files.set('tampered.jsonl', toJsonl(t));
    await s.close();

    const other = await started('test/tools-v0');
    const out = await line(other.s, ':replay tampered.jsonl');
    expect(out).toContain('cannot replay'); // a different session's files: not there
    other.files.files.set('tampered.jsonl', files.files.get('tampered.jsonl') ?? '');
    const replay = await line(other.s, ':replay tampered.jsonl');
    expect(replay).toContain('switched to test/counter-v0');
    expect(replay).toMatch(/step {3}1 {2}reward 1 {2}same/);
    expect(replay).toMatch(/step {3}2 {2}reward 0 \(saved 0\.5\) {2}DIFFERS \(reward\)/);
    expect(replay).toContain('replayed 2 steps: 1 step differs (1 in reward) (return 1, saved 1.5)');
    expect(other.s.spec?.id).toBe('test/counter-v0');
    await other.s.close();
  });

  it('explains bad files and failed writes', async () => {
    const { s, files } = await started('test/counter-v0');
    expect(await line(s, ':save')).toBe(':save needs a file name, e.g. :save episode.jsonl');
    expect(await line(s, ':save /readonly/x.jsonl')).toBe("cannot save: EACCES: permission denied, open '/readonly/x.jsonl'");
    expect(await line(s, ':replay')).toBe(':replay needs a file name, e.g. :replay episode.jsonl');
    expect(await line(s, ':replay missing.jsonl')).toBe("cannot replay: ENOENT: no such file or directory, open 'missing.jsonl'");
    files.files.set('garbage.jsonl', 'not json\n');
    expect(await line(s, ':replay garbage.jsonl')).toMatch(/^cannot replay: line 1: not JSON/);
    files.files.set('steps-only.jsonl', '{"type":"step","action":1,"reward":1}\n');
    expect(await line(s, ':replay steps-only.jsonl')).toBe('cannot replay: no reset record: the first line must be {"type":"reset", "env_id": ...}');
    files.files.set('unknown-env.jsonl', '{"type":"reset","env_id":"gone-v9","seed":1}\n');
    expect(await line(s, ':replay unknown-env.jsonl')).toMatch(/error UNKNOWN_ENV/);
    await s.close();
  });

  it('stops a replay where the replayed episode ends, and flags a different reset observation', async () => {
    const { s, files } = await started('test/counter-v0', { seed: 1 });
    const steps = [1, 1, 1, 0].map((a, i) => ({
      type: 'step' as const,
      step: i + 1,
      action: a,
      observation: i + 1,
      reward: a,
      terminated: false,
      truncated: false,
      info: {},
    }));
    files.files.set('long.jsonl', toJsonl({ reset: { type: 'reset', env_id: 'test/counter-v0', seed: 1, options: {}, observation: 9, info: {} }, steps }));
    const out = await line(s, ':replay long.jsonl');
    expect(out).toContain('the reset observation differs from the saved one');
    expect(out).toMatch(/step {3}3 {2}reward 1 {2}DIFFERS \(terminated\)/);
    expect(out).not.toMatch(/step {3}4 /);
    expect(out).toContain('replay stopped: the episode ended at step 3, before the 4 saved steps');
    await s.close();
  });

  it('stops a replay at a step the env now refuses', async () => {
    const { s, files } = await started('test/counter-v0', { seed: 1 });
    files.files.set(
      'bad.jsonl',
      toJsonl({
        reset: { type: 'reset', env_id: 'test/counter-v0', seed: 1, options: {}, observation: 0, info: {} },
        steps: [1, 7].map((a, i) => ({
          type: 'step' as const,
          step: i + 1,
          action: a,
          observation: 0,
          reward: 1,
          terminated: false,
          truncated: false,
          info: {},
        })),
      }),
    );
    const out = await line(s, ':replay bad.jsonl');
    expect(out).toMatch(/step 2: error INVALID_ACTION/);
    expect(out).toContain('replay stopped at step 2 of 2: the step failed');
    await s.close();
  });
});

describe('sandgym play arguments', () => {
  it('parses flags', () => {
    expect(parsePlayArgs(['wordle-v0'], {})).toEqual({ envId: 'wordle-v0', encoding: 'json', fixtures: false, envModules: [], serverArgs: [] });
    expect(parsePlayArgs(['code-v0', '--driver', 'local', '--seed', '2', '--', '--max-batch', '4', '--fixtures'], {})).toEqual({
      envId: 'code-v0',
      seed: 2,
      driver: 'local',
      encoding: 'json',
      fixtures: false,
      envModules: [],
      serverArgs: ['--max-batch', '4', '--fixtures'],
    });
    expect(
      parsePlayArgs(
        [
          'code-v0',
          '--url',
          'ws://h:1/v2/ws',
          '--seed',
          '7',
          '--task',
          't1',
          '--split',
          'eval',
          '--encoding',
          'msgpack',
          '--kwargs',
          '{"a":1}',
          '--options',
          '{"word":"plant"}',
        ],
        { SANDGYM_TOKEN: 'tk' },
      ),
    ).toEqual({
      envId: 'code-v0',
      url: 'ws://h:1/v2/ws',
      token: 'tk',
      seed: 7,
      task: 't1',
      split: 'eval',
      encoding: 'msgpack',
      kwargs: { a: 1 },
      options: { word: 'plant' },
      fixtures: false,
      envModules: [],
      serverArgs: [],
    });
    expect(parsePlayArgs(['--help'], {})).toBeNull();
  });

  it('rejects bad flags with a readable message', () => {
    const bad: [string[], RegExp][] = [
      [[], /missing <env_id>/],
      [['a', 'b'], /unexpected argument 'b' \(expected <env_id>\)/],
      [['a', '--seed=-1'], /--seed must be an integer/],
      [['a', '--seed', '1.5'], /--seed must be an integer/],
      [['a', '--url', 'http://x'], /--url must be a ws:\/\//],
      [['a', '--url', 'ws://x/v2/ws', '--fixtures'], /do not apply with --url/],
      [['a', '--url', 'ws://x/v2/ws', '--', '--driver', 'local'], /do not apply with --url/],
      [['a', '--encoding', 'xml'], /--encoding must be one of json, msgpack, got 'xml'/],
      [['a', '--driver', 'vm'], /--driver must be one of docker, local, auto, none/],
      [['a', '--seed'], /option '--seed' needs a value/],
      [['a', '--seed', '--fixtures'], /option '--seed' needs a value/],
      [['a', '--kwargs', '[1]'], /--kwargs must be a JSON object/],
      [['a', '--kwargs', '{'], /--kwargs must be a JSON object/],
      [['a', '--options', '"x"'], /--options must be a JSON object/],
      [['a', '--bogus'], /unknown option '--bogus'/],
    ];
    for (const [argv, re] of bad) {
      expect(() => parsePlayArgs(argv, {}), argv.join(' ')).toThrow(UsageError);
      expect(() => parsePlayArgs(argv, {}), argv.join(' ')).toThrow(re);
    }
  });

  it('parses seeds in the protocol range', () => {
    expect(parseSeed('0')).toBe(0);
    expect(parseSeed(' 9007199254740991 ')).toBe(9007199254740991);
    expect(parseSeed('9007199254740992')).toBeNull();
    expect(parseSeed('1e3')).toBeNull();
  });
});
