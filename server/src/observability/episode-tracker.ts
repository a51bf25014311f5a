// Follows every session's current episode through the episode hook and tells its listeners, once per
// episode, how it ended (an EpisodeSummary): the one place that decides when an episode is over and
// with which outcome (outcomes.ts), for metrics and task statistics alike. Summaries are also the
// interface to the trajectory archive: its reader yields the same shape for archived episodes, so the
// task statistics can start from them (TaskStats.ingest).
import type { CloseEvent, EpisodeObserver, ErrorEvent, ResetEvent, StepEvent } from './episode-events.js';
import { episodeScore, outcomeOfError, SUCCESS_SCORE, type EpisodeOutcome } from './outcomes.js';

/** One finished episode, as metrics, task statistics and the archive's reader see it. */
export interface EpisodeSummary {
  env_id: string;
  episode_id: string;
  /** The env's reset info.task_id / split / task_hash (code-v0, shell-v0), or null. */
  task_id: string | null;
  split: string | null;
  task_hash: string | null;
  outcome: EpisodeOutcome;
  /** Steps taken (successful step results). */
  steps: number;
  /** Sum of the episode's rewards. */
  return: number;
  /** episodeScore(): info.score of the last step, else the return. */
  score: number;
  /** Scored (success or failure) and score >= SUCCESS_SCORE. */
  success: boolean;
  /** Epoch ms of the reset, and of the event that ended it. */
  started_at: number;
  ended_at: number;
  /** For an episode ended by an error or a server-side close: its code. */
  error_code?: string;
}

interface Open {
  env_id: string;
  episode_id: string;
  task_id: string | null;
  split: string | null;
  task_hash: string | null;
  steps: number;
  ret: number;
  lastInfo: Record<string, unknown> | null;
  started_at: number;
}

/** Longest task id / split / hash text kept (an env's own values, bounded all the same). */
const MAX_ID_CHARS = 200;

function idOf(v: unknown): string | null {
  return typeof v === 'string' && v.length > 0 && v.length <= MAX_ID_CHARS ? v : null;
}

export type SummaryListener = (s: EpisodeSummary) => void;

export class EpisodeTracker implements EpisodeObserver {
  readonly name = 'episode-tracker';
  /** Steps need no duration here; the `t` of an untimed step (its start) is close enough for ended_at. */
  readonly stepTiming = 'sampled';
  private readonly open = new Map<string, Open>();
  private listeners: SummaryListener[] = [];
  private warned = false;

  constructor(private readonly log?: { warn(o: object, msg: string): void }) {}

  /** Listens for finished episodes; returns the function that stops it. */
  onFinished(l: SummaryListener): () => void {
    this.listeners = [...this.listeners, l];
    return () => {
      this.listeners = this.listeners.filter((x) => x !== l);
    };
  }

  /** Episodes running now. */
  get running(): number {
    return this.open.size;
  }

  onReset(e: ResetEvent): void {
    const prior = this.open.get(e.session_id);
    if (prior) this.finish(e.session_id, prior, 'abandoned', e.t);
    this.open.set(e.session_id, {
      env_id: e.env_id,
      episode_id: e.episode_id,
      task_id: idOf(e.info.task_id),
      split: idOf(e.info.split),
      task_hash: idOf(e.info.task_hash),
      steps: 0,
      ret: 0,
      lastInfo: null,
      started_at: e.t,
    });
  }

  onStep(e: StepEvent): void {
    const o = this.open.get(e.session_id);
    if (o === undefined || o.episode_id !== e.episode_id) return;
    o.steps++;
    o.ret += e.reward;
    o.lastInfo = e.info;
    if (e.terminated || e.truncated) {
      const score = episodeScore(e.info, o.ret);
      this.finish(e.session_id, o, score >= SUCCESS_SCORE ? 'success' : 'failure', e.t, score);
    }
  }

  onError(e: ErrorEvent): void {
    if (e.session_id === null) return;
    const o = this.open.get(e.session_id);
    if (o === undefined) return;
    // A failed reset ends the episode it was replacing; a session-scope error ends the running one.
    if (e.op === 'reset') this.finish(e.session_id, o, 'abandoned', e.t);
    else if (e.error.scope === 'session' && o.episode_id === e.episode_id)
      this.finish(e.session_id, o, outcomeOfError(e.error.code), e.t, undefined, e.error.code);
  }

  onClose(e: CloseEvent): void {
    const o = this.open.get(e.session_id);
    if (o === undefined) return;
    if (e.code === undefined) this.finish(e.session_id, o, 'abandoned', e.t);
    else this.finish(e.session_id, o, e.code === 'TIMEOUT' ? 'abandoned' : outcomeOfError(e.code), e.t, undefined, e.code);
  }

  private finish(session: string, o: Open, outcome: EpisodeOutcome, t: number, score?: number, code?: string): void {
    this.open.delete(session);
    const s = score ?? episodeScore(o.lastInfo, o.ret);
    const summary: EpisodeSummary = {
      env_id: o.env_id,
      episode_id: o.episode_id,
      task_id: o.task_id,
      split: o.split,
      task_hash: o.task_hash,
      outcome,
      steps: o.steps,
      return: o.ret,
      score: s,
      success: outcome === 'success',
      started_at: o.started_at,
      ended_at: t,
    };
    if (code !== undefined) summary.error_code = code;
    // Listeners are the server's own (metrics, stats); each is isolated like an observer.
    for (const l of this.listeners) {
      try {
        l(summary);
      } catch (err) {
        // A listener's bug must not stop the others, nor the session: logged once.
        if (!this.warned) this.log?.warn({ err }, 'episode summary listener threw (logged once)');
        this.warned = true;
      }
    }
  }
}
