// The episode transcript: reset, then each action with its observation, reward, components, flags
// and info; errors inline where they happened. Observations are text nodes (never HTML).
import { diffFields, type ReplayedStep } from '../../trajectory/replay.js';
import type { ResetRecord, StepRecord } from '../../trajectory/trajectory.js';
import { formatNumber } from '../../trajectory/trajectory.js';
import { h, pretty } from './dom.js';

export interface ErrorView {
  code: string;
  message: string;
  details?: unknown;
}

/** `calculate(expression: "2+3")` for tool calls, JSON otherwise. */
export function actionLabel(action: unknown): string {
  if (action && typeof action === 'object' && !Array.isArray(action)) {
    const call = action as { name?: unknown; arguments?: unknown };
    if (typeof call.name === 'string' && call.arguments && typeof call.arguments === 'object') {
      const args = Object.entries(call.arguments as Record<string, unknown>).map(([k, v]) => `${k}: ${JSON.stringify(v)}`);
      return `${call.name}(${args.join(', ')})`;
    }
  }
  return typeof action === 'string' ? action : pretty(action);
}

function observationBlock(obs: unknown): HTMLElement {
  return h('pre', { class: `observation${typeof obs === 'string' ? '' : ' json'}` }, typeof obs === 'string' ? (obs === '' ? '""' : obs) : pretty(obs, 60));
}

function infoBlock(info: Record<string, unknown>): HTMLElement | null {
  if (Object.keys(info).length === 0) return null;
  return h('details', { class: 'info' }, h('summary', {}, `info ${Object.keys(info).join(', ')}`), h('pre', {}, JSON.stringify(info, null, 2)));
}

export class Transcript {
  constructor(private readonly list: HTMLElement) {}

  clear(): void {
    this.list.replaceChildren();
  }

  private add(li: HTMLElement): void {
    this.list.append(li);
    li.scrollIntoView({ block: 'nearest' });
  }

  reset(rec: ResetRecord, label = 'reset'): void {
    const opts = Object.keys(rec.options).length > 0 ? ` · options ${JSON.stringify(rec.options)}` : '';
    this.add(
      h(
        'li',
        { class: 'entry reset', 'data-kind': 'reset' },
        h(
          'div',
          { class: 'entry-head' },
          h('span', { class: 'badge' }, label),
          h('span', { class: 'muted' }, `${rec.env_id} · seed ${rec.seed ?? 'none'}${opts}`),
        ),
        observationBlock(rec.observation),
        infoBlock(rec.info),
      ),
    );
  }

  /** One step; during a replay `replayed` carries the saved step and the differences (replay.ts). */
  step(rec: StepRecord, episodeReturn: number, replayed?: ReplayedStep): void {
    const { reward_components: comps, ...rest } = rec.info;
    const compList =
      comps && typeof comps === 'object' && !Array.isArray(comps)
        ? h(
            'span',
            { class: 'components' },
            ...Object.entries(comps as Record<string, unknown>).map(([k, v]) =>
              h('span', { class: 'component', 'data-component': k }, `${k} ${typeof v === 'number' ? formatNumber(v) : JSON.stringify(v)}`),
            ),
          )
        : null;
    const rewardClass = rec.reward > 0 ? 'pos' : rec.reward < 0 ? 'neg' : 'zero';
    const differs = replayed !== undefined && replayed.diffs.length > 0;
    const rewardDiffers = replayed?.diffs.some((d) => d.field === 'reward') ?? false;
    const li = h(
      'li',
      {
        class: `entry step${rec.terminated || rec.truncated ? ' final' : ''}${differs ? ' differs' : ''}`,
        'data-kind': 'step',
        'data-step': rec.step,
        'data-reward': rec.reward,
      },
      h(
        'div',
        { class: 'entry-head' },
        h('span', { class: 'badge' }, `step ${rec.step}`),
        h('code', { class: 'action', title: JSON.stringify(rec.action) }, actionLabel(rec.action)),
      ),
      observationBlock(rec.observation),
      h(
        'div',
        { class: 'outcome' },
        h('span', { class: `reward ${rewardClass}` }, `reward ${formatNumber(rec.reward)}`),
        compList,
        h('span', { class: 'muted' }, `return ${formatNumber(episodeReturn)}`),
        rec.terminated ? h('span', { class: 'flag' }, 'terminated') : null,
        rec.truncated ? h('span', { class: 'flag' }, 'truncated') : null,
        replayed !== undefined
          ? h(
              'span',
              { class: differs ? 'flag bad' : 'flag ok', 'data-diffs': diffFields(replayed.diffs) },
              differs
                ? `differs from saved: ${diffFields(replayed.diffs)}${rewardDiffers ? ` (saved reward ${formatNumber(replayed.saved.reward)})` : ''}`
                : 'matches saved',
            )
          : null,
      ),
      infoBlock(rest),
    );
    this.add(li);
  }

  error(where: string, err: ErrorView): void {
    this.add(
      h(
        'li',
        { class: 'entry error', 'data-kind': 'error', 'data-code': err.code },
        h('div', { class: 'entry-head' }, h('span', { class: 'badge' }, err.code), h('span', {}, `${where}: ${err.message}`)),
        err.details !== undefined ? h('pre', { class: 'details' }, JSON.stringify(err.details, null, 2)) : null,
      ),
    );
  }

  note(text: string, kind: 'note' | 'good' | 'bad' = 'note'): void {
    this.add(h('li', { class: `entry note ${kind}`, 'data-kind': 'note' }, text));
  }
}
