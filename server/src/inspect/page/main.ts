// The web inspector's controller: connects to the protocol's WebSocket path (/v2/ws) with the TS client, lists envs, makes/resets a
// session, builds the action editor from the spec and keeps the transcript, reward chart, frames pane
// and trajectory in step. All state lives here, in the page; the server sees an ordinary client.
// window.__sandgymInspector exposes that state read-only for tests and curious users.
// Over 500 lines on purpose: the page's one controller holds all its state; rendering is already apart
// (forms.ts, transcript.ts, chart.ts, frames.ts), and what is left is the wiring between them.
import { connect, type SandgymClient } from '#client/client.js';
import type { EnvHandle } from '#client/env-handle.js';
import { wsPath } from '#protocol/version.js';
import { replaySummary, replayTrajectory, type ReplayedStep } from '../../trajectory/replay.js';
import { formatNumber, fromJsonl, parseSeed, toJsonl, type ResetRecord, type StepRecord, type Trajectory } from '../../trajectory/trajectory.js';
import type { EnvSpec } from '#protocol/index.js';
import { toolsOf } from '../../play/types.js';
import { chartData, renderChart, type ChartData } from './chart.js';
import { byId, h } from './dom.js';
import { discreteEditor, jsonEditor, templateFor, textEditor, toolCallEditor, type Editor } from './forms.js';
import { FramesPane, type FrameView } from './frames.js';
import { classifyTarget } from './origin.js';
import { Transcript, type ErrorView } from './transcript.js';

interface InspectorState {
  connected: boolean;
  /** The URL of the current connection (null: none). */
  url: string | null;
  /** Another origin waiting for the user's yes before the page connects to it (null: none). */
  pendingOrigin: string | null;
  envs: string[];
  envId: string | null;
  session: string | null;
  trajectory: Trajectory | null;
  chartData: ChartData;
  frames: FrameView[];
  /** The last replay: steps replayed, steps that differ, where it stopped (null: it did not), its verdict. */
  replay: { steps: number; differing: number; stoppedAt: number | null; verdict: 'same' | 'differs' | 'stopped' } | null;
  /** Count of finished user operations (connect, make, reset, step, replay); tests wait on it. */
  ops: number;
  busy: boolean;
  lastError: ErrorView | null;
  trajectoryJsonl(): string | null;
}

declare global {
  interface Window {
    __sandgymInspector: InspectorState;
  }
}

const el = {
  form: byId<HTMLFormElement>('connect-form'),
  url: byId<HTMLInputElement>('url'),
  token: byId<HTMLInputElement>('token'),
  encoding: byId<HTMLSelectElement>('encoding'),
  status: byId('status'),
  envSelect: byId<HTMLSelectElement>('env-select'),
  envInfo: byId('env-info'),
  kwargsBox: byId<HTMLDetailsElement>('kwargs-box'),
  kwargs: byId<HTMLTextAreaElement>('kwargs'),
  options: byId<HTMLTextAreaElement>('options'),
  seed: byId<HTMLInputElement>('seed'),
  task: byId<HTMLInputElement>('task'),
  split: byId<HTMLSelectElement>('split'),
  makeReset: byId<HTMLButtonElement>('make-reset'),
  reset: byId<HTMLButtonElement>('reset'),
  actionForm: byId<HTMLFormElement>('action-form'),
  actionFields: byId('action-fields'),
  step: byId<HTMLButtonElement>('step'),
  episodeStatus: byId('episode-status'),
  download: byId<HTMLButtonElement>('download'),
  load: byId<HTMLInputElement>('load'),
  loadButton: byId<HTMLButtonElement>('load-button'),
  replaySummary: byId('replay-summary'),
  chart: byId('chart'),
  ret: byId('return'),
  transcript: byId('transcript'),
  frames: byId('frames'),
  frameCount: byId('frame-count'),
  clearFrames: byId<HTMLButtonElement>('clear-frames'),
  originConfirm: byId('origin-confirm'),
  originText: byId('origin-confirm-text'),
  originAccept: byId<HTMLButtonElement>('origin-accept'),
  originReject: byId<HTMLButtonElement>('origin-reject'),
};

const transcript = new Transcript(el.transcript);
const framesPane = new FramesPane(el.frames, el.frameCount);
let client: SandgymClient | null = null;
let specs: EnvSpec[] = [];
let handle: EnvHandle | null = null;
/** The kwargs the current session was made with (recorded in trajectories for replay). */
let handleKwargs: Record<string, unknown> | undefined;
let editor: Editor | null = null;
let traj: Trajectory | null = null;
let queue: Promise<unknown> = Promise.resolve();
/** The page's own server: connected to without asking. */
const ownUrl = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}${wsPath()}`;
/** Other origins the user said yes to, for the life of the page (a reconnect does not ask again). */
const confirmedOrigins = new Set<string>();

const state: InspectorState = {
  connected: false,
  url: null,
  pendingOrigin: null,
  envs: [],
  envId: null,
  session: null,
  trajectory: null,
  chartData: { steps: [], components: [], episodeReturn: 0 },
  frames: framesPane.frames,
  replay: null,
  ops: 0,
  busy: false,
  lastError: null,
  trajectoryJsonl: () => (traj ? toJsonl(traj) : null),
};
window.__sandgymInspector = state;

function asError(err: unknown): ErrorView {
  const e = (err && typeof err === 'object' ? err : {}) as { code?: unknown; message?: unknown; details?: unknown };
  return {
    code: typeof e.code === 'string' ? e.code : 'ERROR',
    message: typeof e.message === 'string' ? e.message : String(err),
    ...(e.details !== undefined ? { details: e.details } : {}),
  };
}

/** Runs user operations one at a time, in click order; failures land in the transcript. */
function run(where: string, op: () => Promise<void>): Promise<void> {
  const next = queue.then(async () => {
    state.busy = true;
    document.body.classList.add('busy');
    try {
      await op();
    } catch (err) {
      state.lastError = asError(err);
      transcript.error(where, state.lastError);
    } finally {
      state.busy = false;
      document.body.classList.remove('busy');
      state.ops++;
      refreshButtons();
    }
  });
  queue = next;
  return next;
}

function setStatus(text: string, kind: 'idle' | 'ok' | 'busy' | 'error'): void {
  el.status.textContent = text;
  el.status.dataset.state = kind;
}

function currentSpec(): EnvSpec | undefined {
  return specs.find((s) => s.id === el.envSelect.value);
}

function episodeOver(): boolean {
  const last = traj?.steps[traj.steps.length - 1];
  return last !== undefined && (last.terminated || last.truncated);
}

function refreshButtons(): void {
  const connected = client !== null && !client.closed;
  el.envSelect.disabled = !connected;
  el.makeReset.disabled = !connected || !el.envSelect.value;
  el.reset.disabled = !connected || handle === null;
  el.step.disabled = !connected || handle === null || traj === null;
  el.download.disabled = traj === null;
  el.loadButton.disabled = !connected;
  const last = traj?.steps[traj.steps.length - 1];
  el.episodeStatus.textContent = !traj
    ? ''
    : episodeOver()
      ? `episode ${last?.terminated ? 'terminated' : 'truncated'} · reset to play again`
      : `step ${traj.steps.length + 1} next`;
}

function updateChart(): void {
  const spec = handle?.spec as EnvSpec | undefined;
  state.chartData = chartData(spec?.rubric, traj?.steps ?? []);
  const slots = typeof spec?.max_episode_steps === 'number' && spec.max_episode_steps <= 60 ? spec.max_episode_steps : 10;
  renderChart(el.chart, state.chartData, slots);
  el.ret.textContent = traj ? `return ${formatNumber(state.chartData.episodeReturn)} over ${traj.steps.length} step${traj.steps.length === 1 ? '' : 's'}` : '';
}

function describeSpec(spec: EnvSpec): void {
  const facts: [string, string][] = [
    ['action', spaceLabel(spec.action_space)],
    ['observation', spaceLabel(spec.observation_space)],
    ['max steps', spec.max_episode_steps == null ? 'unlimited' : String(spec.max_episode_steps)],
  ];
  if (spec.reward_range) facts.push(['reward range', `[${spec.reward_range.join(', ')}]`]);
  if (spec.rubric?.length) facts.push(['rubric', spec.rubric.map((r) => `${r.name} ×${r.weight}`).join(', ')]);
  if (spec.tasks)
    facts.push([
      'tasks',
      Object.entries(spec.tasks.splits)
        .map(([k, n]) => `${k} ${n}`)
        .join(', '),
    ]);
  el.envInfo.replaceChildren(
    h('p', { class: 'env-desc' }, spec.description ?? ''),
    h('dl', {}, ...facts.flatMap(([k, v]) => [h('dt', {}, k), h('dd', {}, v)])),
  );
  const hasTasks = spec.tasks !== undefined;
  for (const t of Array.from(document.querySelectorAll<HTMLElement>('.task-only'))) t.hidden = !hasTasks;
  el.split.replaceChildren(h('option', { value: '' }, '(any)'), ...Object.keys(spec.tasks?.splits ?? {}).map((k) => h('option', { value: k }, k)));
  const kwProps = spec.kwargs_schema?.properties;
  el.kwargsBox.hidden = !(kwProps && Object.keys(kwProps).length > 0);
}

function spaceLabel(space: { type: string; [k: string]: unknown }): string {
  switch (space.type) {
    case 'text':
      return `text ≤ ${String(space.max_length)}`;
    case 'discrete':
      return `discrete n=${String(space.n)}`;
    case 'tool_call':
      return `tool_call: ${(Array.isArray(space.tools) ? (space.tools as { name: string }[]) : []).map((t) => t.name).join(', ')}`;
    case 'box':
      return `box ${JSON.stringify(space.shape)} ${String(space.dtype)}`;
    case 'dict':
      return `dict {${(Array.isArray(space.spaces) ? (space.spaces as { key: string }[]) : []).map((s) => s.key).join(', ')}}`;
    default:
      return space.type;
  }
}

function buildEditor(spec: EnvSpec): void {
  const submit = () => el.actionForm.requestSubmit();
  const space = spec.action_space;
  if (space.type === 'tool_call') editor = toolCallEditor(toolsOf(spec), submit);
  else if (space.type === 'text') editor = textEditor(space, submit);
  else if (space.type === 'discrete') editor = discreteEditor(space, submit);
  else editor = jsonEditor(templateFor(space), `${space.type} action (JSON)`);
  el.actionFields.replaceChildren(editor.el, h('p', { id: 'action-error', class: 'action-error', role: 'alert' }));
}

function showActionError(text: string): void {
  const p = document.getElementById('action-error');
  if (p) p.textContent = text;
}

function hideOriginConfirm(): void {
  state.pendingOrigin = null;
  el.originConfirm.hidden = true;
}

/** Asks before the first connection to another origin: nothing (no hello, no token) goes there until the user says yes. */
function askOrigin(origin: string): void {
  state.pendingOrigin = origin;
  el.originText.textContent =
    `The server field points at another origin, ${origin}, not at the server this page came from (${location.origin}). ` +
    'Connecting sends it the token in the token field and everything you do here. Connect only if you trust it.';
  el.originAccept.textContent = `Connect to ${origin}`;
  el.originConfirm.hidden = false;
  setStatus(`not connected: confirm ${origin}`, 'idle');
  el.originReject.focus();
}

/** Connects to the server field's URL; false when that is another origin the user has not confirmed (nothing was sent). */
async function doConnect(): Promise<boolean> {
  const url = el.url.value.trim();
  const target = classifyTarget(url, location);
  if (!target.ok) {
    setStatus('bad server URL', 'error');
    throw Object.assign(new Error(target.error), { code: 'BAD_INPUT' });
  }
  if (!target.own && !confirmedOrigins.has(target.origin)) {
    askOrigin(target.origin);
    return false;
  }
  hideOriginConfirm();
  if (client) {
    const old = client;
    client = null;
    handle = null;
    state.url = null;
    await old.close().catch(() => undefined);
  }
  state.connected = false;
  setStatus('connecting…', 'busy');
  framesPane.clear();
  const token = el.token.value.trim();
  try {
    client = await connect(url, {
      encoding: el.encoding.value === 'msgpack' ? 'msgpack' : 'json',
      clientName: 'sandgym-inspector',
      onFrame: (f) => framesPane.add(f),
      ...(token ? { token } : {}),
    });
  } catch (err) {
    const e = asError(err);
    setStatus(e.code === 'UNAUTHORIZED' || /4401/.test(e.message) ? 'unauthorized: enter the token' : `cannot connect (${e.code})`, 'error');
    throw err;
  }
  const c = client;
  c.on('close', (err) => {
    if (client !== c) return;
    state.connected = false;
    state.url = null;
    handle = null;
    state.session = null;
    const e = asError(err);
    setStatus(`disconnected (${String((e.details as { server_code?: string } | undefined)?.server_code ?? e.code)})`, 'error');
    transcript.error('connection', e);
    refreshButtons();
  });
  c.on('event', (ev) => {
    transcript.note(`server event ${ev.event}${ev.session ? ` for session ${ev.session}` : ''}${ev.details ? ` ${JSON.stringify(ev.details)}` : ''}`, 'bad');
    if (ev.event === 'session_closed' && handle && ev.session === handle.session) {
      handle = null;
      state.session = null;
      refreshButtons();
    }
  });
  state.url = url;
  specs = await c.listEnvs();
  state.envs = specs.map((s) => s.id);
  state.connected = true;
  setStatus(`connected · ${c.serverInfo.name} ${c.serverInfo.version} · protocol v${c.protocolVersion} · ${c.encoding}`, 'ok');
  const wanted = new URLSearchParams(location.search).get('env') ?? el.envSelect.value;
  el.envSelect.replaceChildren(...specs.map((s) => h('option', { value: s.id }, s.id)));
  if (wanted && specs.some((s) => s.id === wanted)) el.envSelect.value = wanted;
  const spec = currentSpec();
  if (spec) describeSpec(spec);
  return true;
}

function readResetParams(): { seed?: number; options: Record<string, unknown> } | string {
  const seedText = el.seed.value.trim();
  const out: { seed?: number; options: Record<string, unknown> } = { options: {} };
  const optText = el.options.value.trim();
  if (optText !== '') {
    let v: unknown;
    try {
      v = JSON.parse(optText);
    } catch (err) {
      return `reset options: not valid JSON (${(err as Error).message})`;
    }
    if (!v || typeof v !== 'object' || Array.isArray(v)) return 'reset options must be a JSON object';
    out.options = { ...(v as Record<string, unknown>) };
  }
  if (seedText !== '') {
    const n = parseSeed(seedText);
    if (n === null) return `seed must be an integer in 0..2^53-1, got '${seedText}'`;
    out.seed = n;
  } else {
    // Always send an explicit seed so the trajectory can be replayed exactly.
    out.seed = Math.floor(Math.random() * 1_000_000);
  }
  if (!el.task.closest('label')?.hidden && el.task.value.trim() !== '') out.options.task_id = el.task.value.trim();
  if (!el.split.closest('label')?.hidden && el.split.value !== '') out.options.split = el.split.value;
  return out;
}

function readKwargs(): Record<string, unknown> | undefined {
  if (el.kwargsBox.hidden) return undefined;
  const t = el.kwargs.value.trim();
  if (t === '' || t === '{}') return undefined;
  const v: unknown = JSON.parse(t);
  if (!v || typeof v !== 'object' || Array.isArray(v)) throw Object.assign(new Error('make kwargs must be a JSON object'), { code: 'INVALID_KWARGS' });
  return v as Record<string, unknown>;
}

async function doMake(envId: string, kwargs: Record<string, unknown> | undefined): Promise<void> {
  if (!client) throw Object.assign(new Error('not connected'), { code: 'NOT_CONNECTED' });
  if (handle) {
    const old = handle;
    handle = null;
    await old.close().catch(() => undefined);
  }
  handle = await client.make(envId, kwargs);
  handleKwargs = kwargs;
  state.envId = envId;
  state.session = handle.session;
  buildEditor(handle.spec);
}

async function doReset(params: { seed?: number; options: Record<string, unknown> }, label = 'reset'): Promise<ResetRecord> {
  if (!handle) throw Object.assign(new Error('make an env first'), { code: 'NO_SESSION' });
  const r = await handle.reset({ ...(params.seed !== undefined ? { seed: params.seed } : {}), options: params.options });
  const rec: ResetRecord = {
    type: 'reset',
    env_id: handle.spec.id,
    ...(handleKwargs ? { kwargs: handleKwargs } : {}),
    seed: params.seed ?? null,
    options: params.options,
    observation: r.observation,
    info: r.info,
  };
  traj = { reset: rec, steps: [] };
  state.trajectory = traj;
  state.replay = null;
  el.replaySummary.hidden = true;
  transcript.clear();
  transcript.reset(rec, label);
  updateChart();
  editor?.focus();
  return rec;
}

async function doStep(action: unknown): Promise<StepRecord> {
  if (!handle || !traj) throw Object.assign(new Error('reset first'), { code: 'NO_SESSION' });
  const rec = recordStep(action, await handle.step(action));
  showStep(rec);
  return rec;
}

function recordStep(
  action: unknown,
  r: { observation: unknown; reward: number; terminated: boolean; truncated: boolean; info: Record<string, unknown> },
): StepRecord {
  const t = traj as Trajectory;
  const rec: StepRecord = {
    type: 'step',
    step: t.steps.length + 1,
    action,
    observation: r.observation,
    reward: r.reward,
    terminated: r.terminated,
    truncated: r.truncated,
    info: r.info,
  };
  t.steps.push(rec);
  return rec;
}

function showStep(rec: StepRecord, replayed?: ReplayedStep): void {
  transcript.step(
    rec,
    (traj?.steps ?? []).reduce((a, st) => a + st.reward, 0),
    replayed,
  );
  updateChart();
}

/** Load & replay: the shared replay semantics (trajectory/replay.ts), rendered into the transcript. */
async function doReplay(text: string, fileName: string): Promise<void> {
  const saved = fromJsonl(text);
  const report = await replayTrajectory(
    saved,
    {
      isCurrent: (envId, kwargs) => handle !== null && handle.spec.id === envId && JSON.stringify(handleKwargs ?? null) === JSON.stringify(kwargs ?? null),
      make: async (envId, kwargs) => {
        if (!specs.some((s) => s.id === envId)) throw Object.assign(new Error(`this server has no env '${envId}'`), { code: 'UNKNOWN_ENV' });
        el.envSelect.value = envId;
        describeSpec(currentSpec() as EnvSpec);
        await doMake(envId, kwargs);
      },
      reset: async ({ seed, options }) => {
        el.seed.value = seed !== undefined ? String(seed) : '';
        el.options.value = Object.keys(options).length > 0 ? JSON.stringify(options) : '';
        return doReset({ ...(seed !== undefined ? { seed } : {}), options }, `replay of ${fileName}`);
      },
      step: async (action) => {
        if (!handle) throw Object.assign(new Error('the session is gone'), { code: 'NO_SESSION' });
        const r = await handle.step(action);
        recordStep(action, r);
        return r;
      },
    },
    {
      onReset: (differs) => {
        if (differs) transcript.note('the reset observation differs from the saved one', 'bad');
      },
      onStep: (s) => showStep(traj?.steps.at(-1) ?? s.replayed, s),
    },
  );
  if (report.stop?.reason === 'error')
    transcript.error(report.stop.step === 0 ? 'replay make/reset' : `replay step ${report.stop.step}`, asError(report.stop.error));
  const stoppedAt = report.stop?.step ?? null;
  state.replay = { steps: report.steps.length, differing: report.differing, stoppedAt, verdict: report.verdict };
  const good = report.verdict === 'same';
  el.replaySummary.hidden = false;
  el.replaySummary.className = `replay-summary ${good ? 'good' : 'bad'}`;
  el.replaySummary.textContent = replaySummary(report, formatNumber);
  transcript.note(el.replaySummary.textContent, good ? 'good' : 'bad');
}

function download(): void {
  if (!traj) return;
  const blob = new Blob([toJsonl(traj)], { type: 'application/x-ndjson' });
  const a = h('a', {
    href: URL.createObjectURL(blob),
    download: `${traj.reset.env_id.replace(/[^A-Za-z0-9_.-]+/g, '_')}-seed${traj.reset.seed ?? 'none'}.jsonl`,
  });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 10_000);
}

// --- wiring -----------------------------------------------------------------------------------

const params = new URLSearchParams(location.search);
// A ?url= of another origin only fills the field: doConnect asks before connecting there.
el.url.value = params.get('url') ?? ownUrl;
if (params.get('encoding') === 'msgpack') el.encoding.value = 'msgpack';
if (params.get('seed')) el.seed.value = params.get('seed') ?? '';
if (params.get('task')) el.task.value = params.get('task') ?? '';
if (params.get('options')) el.options.value = params.get('options') ?? '';

el.form.addEventListener('submit', (ev) => {
  ev.preventDefault();
  void run('connect', async () => {
    await doConnect();
  });
});
el.originAccept.addEventListener('click', () => {
  const origin = state.pendingOrigin;
  if (origin === null) return;
  // The yes holds for the origin shown, and only while the field still points there (checked again in doConnect).
  confirmedOrigins.add(origin);
  hideOriginConfirm();
  void run('connect', connectFromLink);
});
el.originReject.addEventListener('click', () => {
  hideOriginConfirm();
  el.url.value = ownUrl;
  void run('connect', connectFromLink);
});
// Editing the field withdraws a pending question: the next Connect asks about what the field says then.
el.url.addEventListener('input', () => {
  if (state.pendingOrigin === null) return;
  hideOriginConfirm();
  setStatus('not connected', 'idle');
});
el.envSelect.addEventListener('change', () => {
  const spec = currentSpec();
  if (spec) describeSpec(spec);
  refreshButtons();
});
el.makeReset.addEventListener('click', () => {
  void run('make', async () => {
    const p = readResetParams();
    if (typeof p === 'string') throw Object.assign(new Error(p), { code: 'BAD_INPUT' });
    await doMake(el.envSelect.value, readKwargs());
    await doReset(p);
  });
});
el.reset.addEventListener('click', () => {
  void run('reset', async () => {
    const p = readResetParams();
    if (typeof p === 'string') throw Object.assign(new Error(p), { code: 'BAD_INPUT' });
    await doReset(p);
  });
});
el.actionForm.addEventListener('submit', (ev) => {
  ev.preventDefault();
  if (!editor || el.step.disabled) return;
  const r = editor.read();
  if (!r.ok) {
    showActionError(r.error);
    return;
  }
  showActionError('');
  const used = editor;
  void run('step', async () => {
    await doStep(r.value);
    used.afterStep?.();
  });
});
el.download.addEventListener('click', download);
el.load.addEventListener('change', () => {
  const file = el.load.files?.[0];
  if (!file) return;
  void run('replay', async () => {
    await doReplay(await file.text(), file.name);
  });
  el.load.value = '';
});
el.loadButton.addEventListener('click', () => el.load.click());
el.clearFrames.addEventListener('click', () => framesPane.clear());

updateChart();
refreshButtons();
/** The page's first connection (and the one after an origin question): the link's env and autoreset apply. */
async function connectFromLink(): Promise<void> {
  try {
    if (!(await doConnect())) return;
  } catch (err) {
    // A token-protected server: say so in the status line, not as a transcript error.
    if (asError(err).code === 'UNAUTHORIZED' || (client === null && asError(err).code !== 'BAD_INPUT')) {
      el.token.focus();
      return;
    }
    throw err;
  }
  if (params.get('env') && params.get('autoreset') === '1') {
    const p = readResetParams();
    if (typeof p !== 'string') {
      await doMake(el.envSelect.value, undefined);
      await doReset(p);
    }
  }
}

// Connect straight away unless told not to: against a token-less local server the page is ready at once.
if (params.get('connect') !== '0') void run('connect', connectFromLink);
