// The web inspector in real headless Chromium (Debian's chromium through playwright-core) against a
// real sandgym server: generated forms, transcript, reward chart data, frames pane, trajectory
// download/replay, msgpack, and token auth. Skips only when Chromium is missing, and fails instead
// under SANDGYM_REQUIRE_BROWSER=1 (.ci/run sets it).
import { readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { mulberry32, PROTOCOL_VERSION, PROTOCOL_VERSIONS, sampleSpace, wsPath, type Space } from '../../../protocol/src/index.js';
import { fromJsonl, toJsonl } from '../../src/trajectory/trajectory.js';
import { browserRequired, browserUnavailable, launchBrowser, startInspectServer, waitOps, type BrowserSession, type InspectServer } from './harness.js';
import { ARTIFACT_PNG, playScreenshotEpisode } from './screenshot.js';

const why = browserUnavailable();

if (why && browserRequired) {
  describe('web inspector in Chromium', () => {
    it('has a browser to run in', () => {
      throw new Error(`SANDGYM_REQUIRE_BROWSER=1 but ${why}`);
    });
  });
}

type Inspector = Window['__sandgymInspector'];

const inspector = <T>(page: Page, fn: (s: Inspector) => T): Promise<T> => page.evaluate(`(${fn.toString()})(window.__sandgymInspector)`) as Promise<T>;

describe.skipIf(why !== null)(`web inspector in Chromium${why ? ` (skipped: ${why})` : ''}`, () => {
  let server: InspectServer;
  let browser: BrowserSession;
  let page: Page;
  let ops = 0;

  /** Runs a UI action and waits for the inspector to finish the operation it starts. */
  async function op(action: () => Promise<unknown>): Promise<void> {
    await action();
    await waitOps(page, ++ops);
  }

  async function open(query: string, base = server.base): Promise<void> {
    ops = 0;
    await page.goto(`${base}/inspect${query}`);
    await waitOps(page, ++ops); // the automatic connect
  }

  beforeAll(async () => {
    server = await startInspectServer({ env_modules: [fileURLToPath(new URL('./form-env.ts', import.meta.url))] });
    browser = await launchBrowser();
    page = browser.page;
  });

  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  beforeEach(() => {
    browser.errors.length = 0;
  });

  it('plays a tool env through forms generated from the tool schemas', async () => {
    await open('?env=test/tools-v0');
    expect(await page.textContent('#status')).toMatch(new RegExp(`^connected · sandgym .* protocol v${PROTOCOL_VERSION} · json$`));
    expect(await page.inputValue('#env-select')).toBe('test/tools-v0');
    await op(() => page.click('#make-reset'));

    // One tab per tool plus raw JSON; each form has one field per parameter, typed by the schema.
    expect(await page.$$eval('.tool-tabs [data-tool]', (els) => els.map((e) => e.getAttribute('data-tool')))).toEqual(['echo', 'add', 'finish', '__raw__']);
    await page.fill('[data-param="text"]', 'hello there');
    await op(() => page.click('#step'));
    await page.click('[data-tool="add"]');
    expect(await page.getAttribute('[data-param="a"]', 'inputmode')).toBe('decimal');
    await page.fill('[data-param="a"]', '2');
    await page.fill('[data-param="b"]', '3.5');
    await op(() => page.click('#step'));

    // A bad number is caught in the page: no frame is sent, the field is named.
    const framesBefore = await inspector(page, (s) => s.frames.length);
    await page.click('[data-tool="finish"]');
    await page.fill('[data-param="answer"]', 'forty-two');
    await page.click('#step');
    expect(await page.textContent('#action-error')).toBe("answer must be a number, got 'forty-two'");
    expect(await inspector(page, (s) => s.frames.length)).toBe(framesBefore);

    // The raw JSON tab sends anything; the server's INVALID_ACTION shows in the transcript and the session survives.
    await page.click('[data-tool="__raw__"]');
    await page.fill('[data-param="json"]', '{"name": "nope", "arguments": {}}');
    await op(() => page.click('#step'));
    expect(await page.getAttribute('#transcript li[data-kind="error"]', 'data-code')).toBe('INVALID_ACTION');

    await page.click('[data-tool="finish"]');
    await page.fill('[data-param="answer"]', '42');
    await op(() => page.click('#step'));

    const entries = await page.$$eval('#transcript > li', (lis) =>
      lis.map((li) => ({
        kind: li.getAttribute('data-kind'),
        reward: li.getAttribute('data-reward'),
        action: li.querySelector('.action')?.textContent ?? null,
        observation: li.querySelector('.observation')?.textContent ?? null,
      })),
    );
    expect(entries).toEqual([
      { kind: 'reset', reward: null, action: null, observation: 'ready' },
      { kind: 'step', reward: '0', action: 'echo(text: "hello there")', observation: 'hello there' },
      { kind: 'step', reward: '0', action: 'add(a: 2, b: 3.5)', observation: '5.5' },
      { kind: 'error', reward: null, action: null, observation: null },
      { kind: 'step', reward: '1', action: 'finish(answer: 42)', observation: 'done' },
    ]);
    expect(await page.textContent('#transcript li[data-step="3"] .outcome')).toContain('terminated');
    expect(await page.textContent('#episode-status')).toContain('terminated');

    // Chart data: one entry per step; no rubric => the reward itself is the only series.
    const chart = await inspector(page, (s) => s.chartData);
    expect(chart.steps.map((s) => s.reward)).toEqual([0, 0, 1]);
    expect(chart.episodeReturn).toBe(1);
    expect(chart.components.map((c) => c.name)).toEqual(['(reward)']);
    expect(await page.getAttribute('#chart', 'data-steps')).toBe('3');
    expect(await page.$$eval('#chart g.bar', (gs) => gs.map((g) => g.getAttribute('data-reward')))).toEqual(['0', '0', '1']);

    // Frames pane: the exact frames, hello first, each request followed by its reply.
    const frames = await inspector(page, (s) => s.frames);
    expect(frames[0]).toMatchObject({ direction: 'sent', type: 'hello', encoding: 'json' });
    expect(JSON.parse(frames[0]?.text ?? '{}')).toMatchObject({
      id: 1,
      type: 'hello',
      versions: [...PROTOCOL_VERSIONS],
      client: { name: 'sandgym-inspector' },
    });
    expect(frames[1]).toMatchObject({ direction: 'received', type: 'result ← hello' });
    const sentSteps = frames.filter((f) => f.direction === 'sent' && f.type === 'step').map((f) => JSON.parse(f.text) as { action: unknown });
    expect(sentSteps.map((m) => m.action)).toEqual([
      { name: 'echo', arguments: { text: 'hello there' } },
      { name: 'add', arguments: { a: 2, b: 3.5 } },
      { name: 'nope', arguments: {} },
      { name: 'finish', arguments: { answer: 42 } },
    ]);
    expect(frames.some((f) => f.direction === 'received' && f.type === 'error INVALID_ACTION ← step')).toBe(true);
    const lastReply = JSON.parse(frames[frames.length - 1]?.text ?? '{}') as { type: string; result: Record<string, unknown> };
    expect(lastReply).toMatchObject({ type: 'result', result: { observation: 'done', reward: 1, terminated: true, truncated: false } });
    // What the pane shows is what the state says.
    expect(await page.$$eval('#frames > li', (lis) => lis.length)).toBe(frames.length);
    expect(await page.textContent('#frames > li:last-child .frame-body')).toBe(frames[frames.length - 1]?.text);

    // Stepping after the end is a protocol error, shown, not a crash.
    await op(() => page.click('#step'));
    expect(await page.$$eval('#transcript li[data-kind="error"]', (lis) => lis.map((li) => li.getAttribute('data-code')))).toEqual([
      'INVALID_ACTION',
      'RESET_NEEDED',
    ]);
    expect(browser.errors).toEqual([]);
  });

  it('generates forms for every parameter kind and sends task, split, kwargs and options', async () => {
    await open('?env=inspect/forms-v0');
    // Task envs get task and split fields; envs with kwargs get the kwargs editor.
    expect(await page.isVisible('#task')).toBe(true);
    expect(await page.$$eval('#split option', (os) => os.map((o) => (o as HTMLOptionElement).value))).toEqual(['', 'train', 'eval']);
    expect(await page.isHidden('#kwargs-box')).toBe(false);
    await page.click('#kwargs-box summary');
    await page.fill('#kwargs', '{"difficulty": "hard"}');
    await page.fill('#task', 't-2');
    await page.selectOption('#split', 'eval');
    await page.fill('#seed', '9');
    await op(() => page.click('#make-reset'));
    expect(JSON.parse((await page.textContent('#transcript li[data-kind="reset"] .observation')) ?? '')).toEqual({
      seed: 9,
      options: { task_id: 't-2', split: 'eval' },
      kwargs: { difficulty: 'hard' },
    });

    // configure: integer, required enum (no unset), optional boolean (unset/true/false), array as JSON, strings.
    expect(await page.getAttribute('[data-param="level"]', 'inputmode')).toBe('numeric');
    expect(await page.$$eval('[data-param="mode"] option', (os) => os.map((o) => o.textContent))).toEqual(['fast', 'slow']);
    expect(await page.$$eval('[data-param="verbose"] option', (os) => os.map((o) => o.textContent))).toEqual(['(unset)', 'true', 'false']);
    expect(await page.evaluate(() => document.querySelector('[data-param="content"]')?.tagName)).toBe('TEXTAREA');
    expect(await page.evaluate(() => document.querySelector('[data-param="note"]')?.tagName)).toBe('INPUT');
    expect(await page.textContent('[data-tool-form="configure"]')).toContain('how hard');
    await page.fill('[data-param="level"]', '1.5');
    await page.click('#step');
    expect(await page.textContent('#action-error')).toBe("level must be an integer, got '1.5'");
    await page.fill('[data-param="level"]', '3');
    await page.selectOption('[data-param="mode"]', { label: 'slow' });
    await page.selectOption('[data-param="verbose"]', 'true');
    await page.fill('[data-param="tags"]', '["a", "b"]');
    await page.fill('[data-param="content"]', 'line 1\nline 2');
    await op(() => page.click('#step'));
    expect(await page.textContent('#action-error')).toBe('');
    expect(JSON.parse((await page.textContent('#transcript li[data-step="1"] .observation')) ?? '')).toEqual({
      level: 3,
      mode: 'slow',
      verbose: true,
      tags: ['a', 'b'],
      content: 'line 1\nline 2',
    });
    await page.click('[data-tool="done"]');
    expect(await page.textContent('[data-tool-form="done"]')).toContain('no parameters');
    await op(() => page.click('#step'));

    // Negative rubric weights stack below the axis; contributions add up to the reward.
    const chart = await inspector(page, (s) => s.chartData);
    expect(chart.components.map((c) => [c.name, c.weight])).toEqual([
      ['progress', 1],
      ['penalty', -0.5],
    ]);
    expect(chart.steps.map((s) => [s.reward, s.contributions])).toEqual([
      [0, { progress: 0.5, penalty: -0.5 }],
      [1, { progress: 1, penalty: 0 }],
    ]);
    const trajectory = await inspector(page, (s) => s.trajectoryJsonl());
    expect(fromJsonl(trajectory ?? '').reset).toMatchObject({
      env_id: 'inspect/forms-v0',
      seed: 9,
      kwargs: { difficulty: 'hard' },
      options: { task_id: 't-2', split: 'eval' },
    });
    expect(browser.errors).toEqual([]);
  });

  it('stacks rubric components in the reward chart, downloads the trajectory and replays it', async () => {
    await playScreenshotEpisode(page, server.base);
    ops = 2 + 4;
    const chart = await inspector(page, (s) => s.chartData);
    expect(chart.components.map((c) => [c.name, c.weight])).toEqual([
      ['solve', 1],
      ['information', 0.1],
      ['invalid_guess', -0.1],
    ]);
    // As reported: the weighted contributions (information x 0.1, invalid_guess x -0.1).
    expect(chart.steps.map((s) => s.components)).toEqual([
      { solve: 0, information: 0.1 * 3, invalid_guess: 0 },
      { solve: 0, information: 0, invalid_guess: -0.1 },
      { solve: 0, information: 0.1 * 2, invalid_guess: 0 },
      { solve: 1, information: 0.1 * 2.5, invalid_guess: 0 },
    ]);
    // Weighted contributions sum to each step's reward.
    for (const s of chart.steps) {
      expect(Object.values(s.contributions).reduce((a, b) => a + b, 0)).toBeCloseTo(s.reward, 9);
    }
    expect(chart.steps[1]?.contributions.invalid_guess).toBeCloseTo(-0.1, 9);
    expect(chart.episodeReturn).toBeCloseTo(1.65, 9);
    // The negative part is drawn below the axis, in its own rect.
    expect(
      await page.$$eval('#chart g.bar[data-step="2"] rect', (rs) => rs.map((r) => [r.getAttribute('data-component'), Number(r.getAttribute('data-value'))])),
    ).toEqual([['invalid_guess', -0.1]]);
    expect(await page.textContent('#transcript li[data-step="4"] .observation')).toContain('Solved in 4 guesses!');
    expect(await page.textContent('#return')).toBe('return 1.65 over 4 steps');

    // Download: the JSONL the REPL also reads.
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('#download')]);
    expect(download.suggestedFilename()).toBe('wordle-v0-seed7.jsonl');
    const file = join(tmpdir(), `sandgym-inspector-${process.pid}.jsonl`);
    await download.saveAs(file);
    const saved = fromJsonl(readFileSync(file, 'utf8'));
    expect(saved.reset).toMatchObject({ env_id: 'wordle-v0', seed: 7, options: { word: 'plant' } });
    expect(saved.steps.map((s) => s.action)).toEqual(['crane', 'xyzzy', 'slate', 'plant']);

    // Replay it: same rewards.
    await op(() => page.setInputFiles('#load', file));
    expect(await inspector(page, (s) => s.replay)).toEqual({ steps: 4, differing: 0, stoppedAt: null, verdict: 'same' });
    expect(await page.textContent('#replay-summary')).toBe('replayed 4 steps: every step matches (return 1.65)');
    expect(await page.$$eval('#transcript .flag.ok', (els) => els.length)).toBe(4);

    // A tampered file: the differing step is flagged.
    saved.steps[2] = { ...(saved.steps[2] as (typeof saved.steps)[number]), reward: 0.9 };
    writeFileSync(file, toJsonl(saved));
    await op(() => page.setInputFiles('#load', file));
    expect(await inspector(page, (s) => s.replay)).toEqual({ steps: 4, differing: 1, stoppedAt: null, verdict: 'differs' });
    expect(await page.textContent('#transcript li.differs .flag.bad')).toBe('differs from saved: reward (saved reward 0.9)');
    expect(await page.textContent('#replay-summary')).toBe('replayed 4 steps: 1 step differs (1 in reward) (return 1.65, saved 2.35)');

    // Saved steps beyond the end of the replayed episode: the replay stops where the episode ends
    // (the same semantics as `:replay` in sandgym play: server/src/trajectory/replay.ts).
    saved.steps[2] = { ...(saved.steps[2] as (typeof saved.steps)[number]), reward: 0.2 };
    saved.steps.push({ ...(saved.steps[3] as (typeof saved.steps)[number]), step: 5, action: 'crane' });
    writeFileSync(file, toJsonl(saved));
    await op(() => page.setInputFiles('#load', file));
    expect(await inspector(page, (s) => s.replay)).toEqual({ steps: 4, differing: 0, stoppedAt: 4, verdict: 'stopped' });
    expect(await page.textContent('#replay-summary')).toBe('replay stopped: the episode ended at step 4, before the 5 saved steps');
    expect(browser.errors).toEqual([]);
  });

  it('saves a screenshot of a finished episode', async () => {
    await playScreenshotEpisode(page, server.base, ARTIFACT_PNG);
    const png = readFileSync(ARTIFACT_PNG);
    expect(png.subarray(1, 4).toString()).toBe('PNG');
    expect(png.length).toBeGreaterThan(20_000);
  });

  it('makes, resets and steps every listed env from its generated editor', async () => {
    await open('');
    const envs = await inspector(page, (s) => s.envs);
    expect(envs).toEqual(expect.arrayContaining(['math-v0', 'wordle-v0', 'calculator-tools-v0', 'test/tools-v0']));
    const specs = (await (await fetch(`${server.base}/v${PROTOCOL_VERSION}/envs`)).json()) as
      | { envs?: { id: string; action_space: Space; sandbox?: unknown }[] }
      | { id: string; action_space: Space; sandbox?: unknown }[];
    const list = Array.isArray(specs) ? specs : (specs.envs ?? []);
    const rng = mulberry32(11);
    for (const spec of list) {
      if (spec.sandbox !== undefined || spec.id === 'test/sandbox-fail-v0') continue;
      await page.selectOption('#env-select', spec.id);
      await page.fill('#seed', '5');
      await op(() => page.click('#make-reset'));
      expect(await page.getAttribute('#transcript > li:first-child', 'data-kind'), spec.id).toBe('reset');
      const type = spec.action_space.type;
      const action = sampleSpace(spec.action_space, rng);
      if (type === 'tool_call') {
        await page.click('[data-tool="__raw__"]');
        await page.fill('[data-param="json"]', JSON.stringify(action));
        await op(() => page.click('#step'));
      } else if (type === 'text') {
        await page.fill('[data-param="text"]', String(action).replace(/\n/g, ' ') || 'x');
        await op(() => page.click('#step'));
      } else if (type === 'discrete') {
        await op(() => page.click(`[data-discrete="${String(action)}"]`));
      } else {
        await page.fill('[data-param="json"]', JSON.stringify(action));
        await op(() => page.click('#step'));
      }
      const kinds = await page.$$eval('#transcript > li', (lis) => lis.map((li) => li.getAttribute('data-kind')));
      // crash-v0 may answer ENV_ERROR; everything else takes its own sampled action.
      expect(kinds, spec.id).toEqual(spec.id === 'test/crash-v0' ? [kinds[0], kinds[1]] : ['reset', 'step']);
      expect(await page.getAttribute('#chart', 'data-steps'), spec.id).toBe(kinds[1] === 'step' ? '1' : '0');
    }
    expect(browser.errors).toEqual([]);
  });

  it('offers a JSON editor for dict spaces and quick buttons for discrete ones, over msgpack', async () => {
    await open('?env=test/dict-v0&encoding=msgpack&seed=1');
    expect(await page.textContent('#status')).toMatch(/msgpack$/);
    await op(() => page.click('#make-reset'));
    // Prefilled with a value of the right shape.
    expect(JSON.parse(await page.inputValue('[data-param="json"]'))).toEqual({ move: [0, 0], say: '' });
    await page.fill('[data-param="json"]', '{"move": [0.5, -1], "say": "hi"}');
    await op(() => page.click('#step'));
    expect(await page.textContent('#transcript li[data-step="1"] .observation')).toBe('{"position":[0.5,-1],"label":"hi"}');
    expect(await page.getAttribute('#transcript li[data-step="1"]', 'data-reward')).toBe('1');
    // Out of the box bounds: INVALID_ACTION names the path.
    await page.fill('[data-param="json"]', '{"move": [5, 0], "say": "hi"}');
    await op(() => page.click('#step'));
    expect(await page.textContent('#transcript li[data-kind="error"]')).toContain('/move');
    const frames = await inspector(page, (s) => s.frames);
    expect(frames.every((f) => f.encoding === 'msgpack')).toBe(true);
    expect(await page.$$eval('#frames .frame-hex', (els) => els.length)).toBe(frames.length);

    // Discrete: one button per value sends it.
    await page.selectOption('#env-select', 'test/counter-v0');
    await op(() => page.click('#make-reset'));
    expect(await page.$$eval('[data-discrete]', (bs) => bs.map((b) => b.textContent))).toEqual(['0', '1']);
    for (let i = 0; i < 3; i++) await op(() => page.click('[data-discrete="1"]'));
    expect(await inspector(page, (s) => s.chartData.steps.map((x) => x.reward))).toEqual([1, 1, 1]);
    expect(await page.textContent('#transcript li[data-step="3"] .outcome')).toContain('terminated');
    expect(browser.errors).toEqual([]);
  });
});

describe.skipIf(why !== null)(`web inspector against a token-protected server${why ? ` (skipped: ${why})` : ''}`, () => {
  let server: InspectServer;
  let browser: BrowserSession;

  beforeAll(async () => {
    server = await startInspectServer({ tokens: ['s3cret-token'] });
    browser = await launchBrowser({ width: 1280, height: 800 });
  });

  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  it('asks for the token, refuses a wrong one and works with the right one', async () => {
    const page = browser.page;
    await page.goto(`${server.base}/inspect?env=test/counter-v0`);
    await waitOps(page, 1);
    expect(await page.textContent('#status')).toBe('unauthorized: enter the token');
    expect(await page.isDisabled('#make-reset')).toBe(true);

    await page.fill('#token', 'wrong');
    await page.click('#connect');
    await waitOps(page, 2);
    expect(await page.textContent('#status')).toBe('unauthorized: enter the token');

    await page.fill('#token', 's3cret-token');
    await page.click('#connect');
    await waitOps(page, 3);
    expect(await page.textContent('#status')).toMatch(/^connected/);
    await page.click('#make-reset');
    await waitOps(page, 4);
    await page.click('[data-discrete="1"]');
    await waitOps(page, 5);
    expect(await page.getAttribute('#transcript li[data-step="1"]', 'data-reward')).toBe('1');
    // The token travels in hello (browsers cannot set headers on WebSocket upgrades).
    const hello = await page.evaluate(() => JSON.parse(window.__sandgymInspector.frames[0]?.text ?? '{}') as { token?: string });
    expect(hello.token).toBe('s3cret-token');
  });
});

describe.skipIf(why !== null)(`web inspector and other origins${why ? ` (skipped: ${why})` : ''}`, () => {
  // The page's own server and a second, token-protected one standing in for a host a crafted
  // ?url= link points at. Different ports on 127.0.0.1 are different origins.
  let own: InspectServer;
  let foreign: InspectServer;
  let browser: BrowserSession;
  /** TCP connections the foreign server accepted: the page fetches nothing there but its WebSocket. */
  let foreignConnections = 0;
  const wsUrl = (base: string) => `${base.replace(/^http/, 'ws')}${wsPath()}`;

  beforeAll(async () => {
    own = await startInspectServer();
    foreign = await startInspectServer({ tokens: ['s3cret-token'] });
    foreign.sg.app.server.on('connection', () => foreignConnections++);
    browser = await launchBrowser({ width: 1280, height: 800 });
  });

  afterAll(async () => {
    await browser?.close();
    await own?.close();
    await foreign?.close();
  });

  it('asks before connecting to another origin from ?url=, and sends nothing there until the user says yes', async () => {
    const page = browser.page;
    const foreignUrl = wsUrl(foreign.base);
    const foreignOrigin = foreignUrl.replace(/\/v\d+\/ws$/, '');
    await page.goto(`${own.base}/inspect?env=test/counter-v0&url=${encodeURIComponent(foreignUrl)}`);
    await waitOps(page, 1);
    // Nothing went to the other origin: the page shows it and waits.
    expect(foreignConnections).toBe(0);
    expect(await inspector(page, (s) => [s.connected, s.url, s.pendingOrigin, s.frames.length])).toEqual([false, null, foreignOrigin, 0]);
    expect(await page.isVisible('#origin-confirm')).toBe(true);
    expect(await page.textContent('#origin-confirm-text')).toContain(`another origin, ${foreignOrigin}, not at the server this page came from (${own.base})`);
    expect(await page.textContent('#origin-accept')).toBe(`Connect to ${foreignOrigin}`);
    expect(await page.textContent('#status')).toBe(`not connected: confirm ${foreignOrigin}`);

    // A token typed and Connect clicked (the link prefilled the field): still asked, still nothing sent.
    await page.fill('#token', 's3cret-token');
    await page.click('#connect');
    await waitOps(page, 2);
    expect(foreignConnections).toBe(0);
    expect(await inspector(page, (s) => [s.connected, s.pendingOrigin, s.frames.length])).toEqual([false, foreignOrigin, 0]);

    // "Use this server instead": the page's own server, the foreign one never contacted.
    await page.click('#origin-reject');
    await waitOps(page, 3);
    expect(await page.inputValue('#url')).toBe(wsUrl(own.base));
    expect(await inspector(page, (s) => [s.connected, s.url, s.pendingOrigin])).toEqual([true, wsUrl(own.base), null]);
    expect(await page.isHidden('#origin-confirm')).toBe(true);
    expect(foreignConnections).toBe(0);

    // Typing another origin into the field asks too; the current connection stays as it is meanwhile.
    await page.fill('#url', foreignUrl);
    await page.click('#connect');
    await waitOps(page, 4);
    expect(await inspector(page, (s) => [s.connected, s.url, s.pendingOrigin])).toEqual([true, wsUrl(own.base), foreignOrigin]);
    expect(foreignConnections).toBe(0);
    expect(browser.errors).toEqual([]);
  });

  it('connects to another origin once the user confirms it, and keeps that yes for reconnects', async () => {
    const page = browser.page;
    const foreignUrl = wsUrl(foreign.base);
    const before = foreignConnections;
    await page.goto(`${own.base}/inspect?url=${encodeURIComponent(foreignUrl)}`);
    await waitOps(page, 1);
    expect(foreignConnections).toBe(before);
    await page.click('#origin-accept');
    await waitOps(page, 2);
    // It went there (with no token: none was typed), and the foreign server asks for one.
    expect(foreignConnections).toBe(before + 1);
    expect(await page.textContent('#status')).toBe('unauthorized: enter the token');
    expect(await inspector(page, (s) => s.pendingOrigin)).toBe(null);
    await page.fill('#token', 's3cret-token');
    await page.click('#connect');
    await waitOps(page, 3);
    expect(await inspector(page, (s) => [s.connected, s.url, s.pendingOrigin])).toEqual([true, foreignUrl, null]);
    expect(await page.textContent('#status')).toMatch(/^connected/);
    // The token went in the confirmed origin's hello, and no second question was asked for the reconnect.
    expect(await page.evaluate(() => (JSON.parse(window.__sandgymInspector.frames[0]?.text ?? '{}') as { token?: string }).token)).toBe('s3cret-token');
    expect(await page.isHidden('#origin-confirm')).toBe(true);
    expect(foreignConnections).toBe(before + 2);
  });

  it('connects to its own origin without asking, also when ?url= names it', async () => {
    const page = browser.page;
    const before = foreignConnections;
    await page.goto(`${own.base}/inspect?url=${encodeURIComponent(wsUrl(own.base))}`);
    await waitOps(page, 1);
    expect(await inspector(page, (s) => [s.connected, s.url, s.pendingOrigin])).toEqual([true, wsUrl(own.base), null]);
    expect(await page.isHidden('#origin-confirm')).toBe(true);
    // Not a WebSocket URL at all: a typed error, no connection anywhere.
    await page.fill('#url', 'javascript:alert(1)');
    await page.click('#connect');
    await waitOps(page, 2);
    expect(await inspector(page, (s) => s.lastError?.code)).toBe('BAD_INPUT');
    expect(await page.textContent('#status')).toBe('bad server URL');
    expect(foreignConnections).toBe(before);
  });
});
