// The archive's episode observer: follows each session's episode through the episode hook and hands
// every finished one, as one JSON line, to the writer. On the step path it only keeps references (an
// array push); serialising runs in one setImmediate per event-loop turn for all sessions, after the
// replies of that turn were encoded. Hidden-test text never enters a record (stripInfo).
import { createHash } from 'node:crypto';
import type { ProtocolError } from '../../../../protocol/src/index.js';
import { SERVER_VERSION } from '../../version.js';
import { newEpisodeId, type ArtifactEvent, type CloseEvent, type EpisodeObserver, type ErrorEvent, type OpenEvent, type ResetEvent, type StepEvent } from '../episode-events.js';
import { episodeScore, outcomeOfError, SUCCESS_SCORE, type EpisodeOutcome } from '../outcomes.js';
import { ARCHIVE_FORMAT, type ArchivedError, type ArchivedWorkspace, type EpisodeEnd, type EpisodeRecord } from './format.js';
import type { ArchiveWriter } from './writer.js';

export interface RecorderOptions {
  /** One episode's serialised bytes beyond this: the episode is dropped (episode_too_large). */
  maxEpisodeBytes: number;
  /** A final workspace larger than this is recorded as omitted (its size only). */
  maxWorkspaceBytes: number;
}

interface SessionInfo {
  kwargs: Record<string, unknown>;
  connection_id: string;
}

interface Episode {
  id: string;
  session_id: string;
  env_id: string;
  info: SessionInfo | undefined;
  seed: number | undefined;
  options: Record<string, unknown>;
  started: number;
  ended: number;
  reset: { observation: unknown; info: Record<string, unknown>; duration_ms: number } | null;
  /** Steps not serialised yet (references), and the serialised ones. */
  pending: StepEvent[];
  parts: string[];
  bytes: number;
  ret: number;
  length: number;
  grade: unknown;
  grader: unknown;
  lastInfo: Record<string, unknown> | null;
  request_errors: ArchivedError[];
  workspace: Uint8Array | null;
  end: EpisodeEnd | null;
  /** The close event's code (SHUTTING_DOWN...), for the outcome. */
  closeCode?: string;
  error?: ArchivedError;
  close_reason?: string;
  dropped: boolean;
  /**
   * Its steps passed the per-episode cap or the memory cap: it is still archived, as a record without
   * steps (steps_omitted), so an agent cannot erase a failed episode from the archive (and from the stats
   * read from it) by making it, or the episodes around it, huge.
   */
  stepsOmitted: 'memory' | 'episode_too_large' | null;
}

/** Keys of a grading report that may quote hidden tests (grade.ts GradeResult.log_tail): never archived. */
const HIDDEN_KEYS = ['log_tail'];

/** The info as archived: a grading report loses the keys that may quote hidden tests (copied only then). */
export function stripInfo(info: Record<string, unknown>): Record<string, unknown> {
  const grade = info.grade;
  if (typeof grade !== 'object' || grade === null || !HIDDEN_KEYS.some((k) => k in grade)) return info;
  const clean: Record<string, unknown> = { ...(grade as Record<string, unknown>) };
  for (const k of HIDDEN_KEYS) delete clean[k];
  return { ...info, grade: clean };
}

function archivedError(e: ProtocolError, op: ArchivedError['op'], t: number, stepIndex?: number): ArchivedError {
  return {
    op,
    code: e.code,
    scope: e.scope,
    message: e.message,
    ...(e.details ? { details: e.details } : {}),
    ...(stepIndex !== undefined ? { step_index: stepIndex } : {}),
    t,
  };
}

export class EpisodeRecorder implements EpisodeObserver {
  readonly name = 'archive';
  private readonly sessions = new Map<string, SessionInfo>();
  private readonly episodes = new Map<string, Episode>();
  /** Episodes with something to serialise (pending steps, or finished). */
  private dirty = new Set<Episode>();
  private scheduled = false;

  constructor(
    private readonly writer: ArchiveWriter,
    private readonly opts: RecorderOptions,
  ) {}

  onOpen(e: OpenEvent): void {
    this.sessions.set(e.session_id, { kwargs: e.kwargs, connection_id: e.connection_id });
  }

  onReset(e: ResetEvent): void {
    const prev = this.episodes.get(e.session_id);
    if (prev) this.finish(prev, 'abandoned', e.t);
    const ep = this.newEpisode(e.episode_id, e.session_id, e.env_id, e.seed, e.options, e.t - e.duration_ms);
    ep.reset = { observation: e.observation, info: e.info, duration_ms: e.duration_ms };
    this.episodes.set(e.session_id, ep);
    this.markDirty(ep);
  }

  onStep(e: StepEvent): void {
    const ep = this.episodes.get(e.session_id);
    if (ep === undefined || ep.id !== e.episode_id) return;
    // A dropped episode keeps no references to its steps (they would stay alive until it ends).
    if (!ep.dropped) ep.pending.push(e);
    ep.ret += e.reward;
    ep.length++;
    ep.lastInfo = e.info;
    if (e.info.grade !== undefined) {
      ep.grade = e.info.grade;
      ep.grader = e.info.grader ?? null;
    }
    if (e.terminated || e.truncated) this.finish(ep, e.terminated ? 'terminated' : 'truncated', e.t);
    else this.markDirty(ep);
  }

  onError(e: ErrorEvent): void {
    if (e.session_id === null) return; // a refused make: no session, no episode
    const ep = this.episodes.get(e.session_id);
    if (e.op === 'reset') {
      // A failed reset ends the running episode (the env was reset under it) and is an episode of its own
      // that ended in an error before its first step.
      if (ep) this.finish(ep, 'abandoned', e.t);
      const failed = this.newEpisode(newEpisodeId(), e.session_id, e.env_id, undefined, {}, e.t - e.duration_ms);
      failed.error = archivedError(e.error, 'reset', e.t);
      this.finish(failed, 'error', e.t);
      return;
    }
    if (ep === undefined || (e.episode_id !== null && ep.id !== e.episode_id)) return;
    const err = archivedError(e.error, e.op, e.t, e.step_index);
    if (e.error.scope === 'session') {
      ep.error = err;
      this.finish(ep, 'error', e.t);
    } else {
      ep.request_errors.push(err);
    }
  }

  onClose(e: CloseEvent): void {
    this.sessions.delete(e.session_id);
    const ep = this.episodes.get(e.session_id);
    if (!ep) return;
    ep.close_reason = e.reason;
    if (e.code !== undefined) ep.closeCode = e.code;
    if (e.code === 'TIMEOUT' || e.code === 'SANDBOX_ERROR') {
      ep.error = { op: 'close', code: e.code, scope: 'session', message: e.reason, t: e.t };
      this.finish(ep, 'error', e.t);
    } else {
      this.finish(ep, 'closed', e.t);
    }
  }

  /** EnvContext.artifacts of a session: kept with its running episode (code-v0: the graded workspace tar). */
  onArtifact(e: ArtifactEvent): void {
    const ep = this.episodes.get(e.session_id);
    if (ep && !ep.dropped && e.name === 'final_workspace') ep.workspace = e.data;
  }

  /** Serialises everything pending now (shutdown, tests): after it, every finished episode is with the writer. */
  drainNow(): void {
    this.drain();
  }

  /** Episodes still running (they are archived as `closed` when their session closes). */
  get running(): number {
    return this.episodes.size;
  }

  private newEpisode(id: string, session: string, env: string, seed: number | undefined, options: Record<string, unknown>, started: number): Episode {
    return {
      id,
      session_id: session,
      env_id: env,
      info: this.sessions.get(session),
      seed,
      options,
      started,
      ended: started,
      reset: null,
      pending: [],
      parts: [],
      bytes: 0,
      ret: 0,
      length: 0,
      grade: null,
      grader: null,
      lastInfo: null,
      request_errors: [],
      workspace: null,
      end: null,
      dropped: false,
      stepsOmitted: null,
    };
  }

  private finish(ep: Episode, end: EpisodeEnd, t: number): void {
    if (this.episodes.get(ep.session_id) === ep) this.episodes.delete(ep.session_id);
    ep.end = end;
    ep.ended = t;
    this.markDirty(ep);
  }

  private markDirty(ep: Episode): void {
    this.dirty.add(ep);
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => this.drain());
  }

  private drain(): void {
    this.scheduled = false;
    const batch = this.dirty;
    this.dirty = new Set();
    for (const ep of batch) {
      if (!ep.dropped) this.serialiseSteps(ep);
      if (ep.end === null) continue;
      if (!ep.dropped) this.emit(ep);
      if (ep.dropped && ep.stepsOmitted !== null) this.emitWithoutSteps(ep);
    }
  }

  private serialiseSteps(ep: Episode): void {
    for (const s of ep.pending) {
      const text = JSON.stringify({
        step: s.step_index,
        action: s.action,
        observation: s.observation,
        reward: s.reward,
        terminated: s.terminated,
        truncated: s.truncated,
        info: stripInfo(s.info),
        duration_ms: round3(s.duration_ms),
        t: s.t,
      });
      if (!this.book(ep, text.length)) return;
      ep.parts.push(text);
    }
    ep.pending = [];
  }

  /** Books bytes for an episode; on refusal the episode is dropped (its bytes released, counted). */
  private book(ep: Episode, n: number): boolean {
    if (ep.bytes + n > this.opts.maxEpisodeBytes) return this.dropEpisode(ep, 'episode_too_large');
    if (!this.writer.reserve(n)) return this.dropEpisode(ep, 'memory');
    ep.bytes += n;
    return true;
  }

  private dropEpisode(ep: Episode, reason: 'memory' | 'episode_too_large'): false {
    ep.dropped = true;
    ep.stepsOmitted = reason;
    this.writer.release(ep.bytes);
    ep.bytes = 0;
    ep.parts = [];
    ep.pending = [];
    ep.workspace = null;
    this.writer.drop(reason, ep.id);
    return false;
  }

  private emit(ep: Episode): void {
    const line = this.line(ep, false);
    const extra = line.length - ep.bytes;
    if (!this.book(ep, extra)) return;
    ep.parts = [];
    ep.workspace = null;
    this.writer.enqueue(line, ep.bytes);
  }

  /**
   * The record of an episode whose steps passed the per-episode cap: everything but its steps, reset
   * observation, kwargs, options and workspace (the fields whose size the client or agent controls),
   * with steps_omitted. Booked with the writer's summary headroom (else it is lost, counted as dropped).
   */
  private emitWithoutSteps(ep: Episode): void {
    const line = this.line(ep, true);
    if (line.length > this.opts.maxEpisodeBytes || !this.writer.reserveSummary(line.length)) return;
    this.writer.enqueue(line, line.length);
  }

  private line(ep: Episode, withoutSteps: boolean): string {
    const info = ep.info;
    const resetInfo = ep.reset?.info ?? {};
    const taskId = resetInfo.task_id;
    const str = (v: unknown) => (typeof v === 'string' ? v : null);
    const record: Omit<EpisodeRecord, 'steps'> = {
      format: ARCHIVE_FORMAT,
      episode_id: ep.id,
      server: { instance: this.writer.instance, version: SERVER_VERSION },
      session_id: ep.session_id,
      connection_id: info?.connection_id ?? null,
      env_id: ep.env_id,
      kwargs: withoutSteps ? {} : (info?.kwargs ?? {}),
      task: typeof taskId === 'string' ? { id: taskId, split: str(resetInfo.split), content_hash: str(resetInfo.task_hash) } : null,
      seed: ep.seed ?? null,
      options: withoutSteps ? {} : ep.options,
      started_at: new Date(ep.started).toISOString(),
      ended_at: new Date(ep.ended).toISOString(),
      end: ep.end as EpisodeEnd,
      ...outcomeOf(ep),
      ...(ep.error ? { error: ep.error } : {}),
      ...(ep.close_reason !== undefined ? { close_reason: ep.close_reason } : {}),
      return: ep.ret,
      length: ep.length,
      reset: ep.reset ? { observation: withoutSteps ? null : ep.reset.observation, info: stripInfo(ep.reset.info), duration_ms: round3(ep.reset.duration_ms) } : null,
      request_errors: ep.request_errors,
      grade: (ep.grade as Record<string, unknown> | null) === null ? null : (stripInfo({ grade: ep.grade }).grade as Record<string, unknown>),
      grader: ep.grader as Record<string, unknown> | null,
      ...(ep.workspace && !withoutSteps ? { final_workspace: this.workspaceOf(ep.workspace) } : {}),
      ...(withoutSteps && ep.stepsOmitted !== null ? { steps_omitted: { reason: ep.stepsOmitted, steps: ep.length } } : {}),
    };
    // The head is serialised whole, then the steps (already text) are spliced in as its last field.
    const head = JSON.stringify(record);
    return `${head.slice(0, -1)},"steps":[${withoutSteps ? '' : ep.parts.join(',')}]}`;
  }

  private workspaceOf(tar: Uint8Array): ArchivedWorkspace | { omitted: string; bytes: number } {
    if (tar.byteLength > this.opts.maxWorkspaceBytes) return { omitted: `larger than ${this.opts.maxWorkspaceBytes} bytes`, bytes: tar.byteLength };
    const buf = Buffer.from(tar.buffer, tar.byteOffset, tar.byteLength);
    return { encoding: 'tar+base64', bytes: tar.byteLength, sha256: createHash('sha256').update(buf).digest('hex'), data: buf.toString('base64') };
  }
}

/**
 * The episode's outcome, score and success on the shared taxonomy, decided as the episode tracker
 * (observability/episode-tracker.ts) decides it from the same events, with the same functions.
 */
function outcomeOf(ep: Episode): { outcome: EpisodeOutcome; score: number; success: boolean } {
  const score = episodeScore(ep.lastInfo, ep.ret);
  let outcome: EpisodeOutcome;
  if (ep.end === 'terminated' || ep.end === 'truncated') outcome = score >= SUCCESS_SCORE ? 'success' : 'failure';
  else if (ep.end === 'error') outcome = ep.closeCode === 'TIMEOUT' ? 'abandoned' : outcomeOfError(ep.error?.code ?? 'ENV_ERROR');
  else if (ep.end === 'closed' && ep.closeCode !== undefined) outcome = outcomeOfError(ep.closeCode);
  else outcome = 'abandoned';
  return { outcome, score, success: outcome === 'success' };
}

function round3(n: number): number {
  return Math.round(n * 1000) / 1000;
}
