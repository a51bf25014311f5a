// Reward chart: one bar per step, stacked from the rubric components' weighted contributions
// (info.reward_components[name]: envs report the weighted parts, which sum to the reward; positive parts
// up and negative parts down), with the step's reward as a marker so a mismatch is visible at a glance.
// Hand-drawn SVG; chartData() is pure and also what tests read through window.__sandgymInspector.
import type { RubricItem } from '#protocol/index.js';
import { formatNumber } from '../../trajectory/trajectory.js';
import { h, s } from './dom.js';

export interface ChartStep {
  step: number;
  reward: number;
  /** As reported in info.reward_components. */
  components: Record<string, number>;
  /** What each bar part draws: the reported components (already weighted), or the reward when there are none. */
  contributions: Record<string, number>;
}

export interface ChartData {
  steps: ChartStep[];
  components: { name: string; weight: number; color: string }[];
  episodeReturn: number;
}

const PALETTE = ['#2563eb', '#16a34a', '#dc2626', '#9333ea', '#d97706', '#0891b2', '#db2777', '#65a30d'];
const NO_COMPONENTS = '(reward)';

export function chartData(rubric: RubricItem[] | undefined, steps: { step: number; reward: number; info: Record<string, unknown> }[]): ChartData {
  const names: string[] = (rubric ?? []).map((r) => r.name);
  const weights = new Map((rubric ?? []).map((r) => [r.name, r.weight]));
  const out: ChartStep[] = steps.map((st) => {
    const raw = st.info.reward_components;
    const components: Record<string, number> = {};
    if (raw && typeof raw === 'object' && !Array.isArray(raw)) {
      for (const [k, v] of Object.entries(raw)) {
        if (typeof v !== 'number') continue;
        components[k] = v;
        if (!names.includes(k)) names.push(k);
      }
    }
    const contributions: Record<string, number> = {};
    for (const [k, v] of Object.entries(components)) contributions[k] = v;
    // Envs without components still get a bar: the reward itself.
    if (Object.keys(components).length === 0) contributions[NO_COMPONENTS] = st.reward;
    return { step: st.step, reward: st.reward, components, contributions };
  });
  if (out.some((st) => NO_COMPONENTS in st.contributions)) names.push(NO_COMPONENTS);
  return {
    steps: out,
    components: names.map((name, i) => ({
      name,
      weight: weights.get(name) ?? 1,
      color: name === NO_COMPONENTS ? '#64748b' : (PALETTE[i % PALETTE.length] as string),
    })),
    episodeReturn: steps.reduce((a, st) => a + st.reward, 0),
  };
}

function niceStep(range: number): number {
  const raw = range / 4;
  const pow = 10 ** Math.floor(Math.log10(raw));
  const f = raw / pow;
  return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 2.5 ? 2.5 : f <= 5 ? 5 : 10) * pow;
}

/** Renders the chart into `host`; `slots` is the x-axis length (max_episode_steps when small). */
export function renderChart(host: HTMLElement, data: ChartData, slots: number): void {
  const W = 640;
  const H = 200;
  const m = { l: 40, r: 12, t: 12, b: 24 };
  const n = Math.max(slots, data.steps.length, 1);
  let hi = 0;
  let lo = 0;
  for (const st of data.steps) {
    let up = 0;
    let down = 0;
    for (const v of Object.values(st.contributions)) v >= 0 ? (up += v) : (down += v);
    hi = Math.max(hi, up, st.reward);
    lo = Math.min(lo, down, st.reward);
  }
  if (hi - lo < 1e-9) hi = 1;
  const tick = niceStep(hi - lo);
  hi = Math.ceil(hi / tick - 1e-9) * tick;
  lo = Math.floor(lo / tick + 1e-9) * tick;
  const y = (v: number) => m.t + ((hi - v) / (hi - lo)) * (H - m.t - m.b);
  const slot = (W - m.l - m.r) / n;
  const barW = Math.max(2, Math.min(36, slot * 0.6));
  const x = (step: number) => m.l + (step - 0.5) * slot;

  const svg = s('svg', { viewBox: `0 0 ${W} ${H}`, class: 'chart-svg', role: 'img', 'aria-label': 'reward per step, stacked by rubric component' });
  for (let v = lo; v <= hi + 1e-9; v += tick) {
    svg.append(s('line', { x1: m.l, x2: W - m.r, y1: y(v), y2: y(v), class: Math.abs(v) < 1e-9 ? 'axis' : 'grid' }));
    svg.append(s('text', { x: m.l - 6, y: y(v) + 4, class: 'tick', 'text-anchor': 'end' }, formatNumber(Math.round(v * 1e6) / 1e6)));
  }
  const labelEvery = Math.ceil(n / 20);
  for (let i = 1; i <= n; i++) {
    if (i % labelEvery === 0 || i === 1) svg.append(s('text', { x: x(i), y: H - 6, class: 'tick', 'text-anchor': 'middle' }, String(i)));
  }
  const colour = new Map(data.components.map((c) => [c.name, c.color]));
  for (const st of data.steps) {
    let up = 0;
    let down = 0;
    const g = s('g', { class: 'bar', 'data-step': st.step, 'data-reward': st.reward });
    for (const c of data.components) {
      const v = st.contributions[c.name];
      if (v === undefined || v === 0) continue;
      const from = v >= 0 ? up : down;
      const to = from + v;
      if (v >= 0) up = to;
      else down = to;
      g.append(
        s(
          'rect',
          {
            x: x(st.step) - barW / 2,
            width: barW,
            y: Math.min(y(from), y(to)),
            height: Math.max(1, Math.abs(y(from) - y(to))),
            fill: colour.get(c.name) ?? '#64748b',
            'data-component': c.name,
            'data-value': v,
          },
          s('title', {}, `step ${st.step} · ${c.name} (weight ${formatNumber(c.weight)}): ${formatNumber(v)}`),
        ),
      );
    }
    g.append(
      s(
        'line',
        { x1: x(st.step) - barW / 2 - 3, x2: x(st.step) + barW / 2 + 3, y1: y(st.reward), y2: y(st.reward), class: 'reward-mark' },
        s('title', {}, `step ${st.step} reward ${formatNumber(st.reward)}`),
      ),
    );
    svg.append(g);
  }
  const legend = h(
    'div',
    { class: 'legend' },
    ...data.components.map((c) =>
      h(
        'span',
        { class: 'legend-item', 'data-component': c.name },
        h('i', { class: `swatch c${data.components.indexOf(c) % PALETTE.length}`, 'data-color': c.color }),
        c.name === NO_COMPONENTS ? 'reward' : `${c.name} ×${formatNumber(c.weight)}`,
      ),
    ),
    h('span', { class: 'legend-item' }, h('i', { class: 'swatch mark' }), 'step reward'),
  );
  host.replaceChildren(svg, legend);
  host.dataset.steps = String(data.steps.length);
  host.dataset.return = String(data.episodeReturn);
  // Swatch colours are set through CSSOM (allowed by the page's CSP, unlike style attributes).
  for (const sw of Array.from(legend.querySelectorAll<HTMLElement>('i[data-color]'))) sw.style.background = sw.dataset.color ?? '';
}
