// The archive's episode observer: follows each session's episode through the episode hook and hands
// every finished one, as one JSON line, to the writer. Each event is serialised when it arrives (a few
// string concatenations around JSON.stringify of the env's values): the episode holds text, never
// references to the env's objects, so an env that reuses or mutates an observation after returning it
// cannot change what was archived, and nothing the archive holds outlives the young generation of the
// heap. The record's fixed parts are written by hand (no record object, no second JSON.stringify of the
// whole line) and the per-session part (format, server, session, connection, env, kwargs) once per
// session. Hidden-test text never enters a record (stripInfo). Profile and figures: BENCHMARKS.md.
import { createHash } from 'node:crypto';
import type { ProtocolError } from '#protocol/index.js';
import { SERVER_VERSION } from '../../version.js';
import {
  newEpisodeId,
  type ArtifactEvent,
  type CloseEvent,
  type EpisodeObserver,
  type ErrorEvent,
  type OpenEvent,
  type ResetEvent,
  type StepEvent,
} from '../episode-events.js';
import { episodeScore, outcomeOfError, SUCCESS_SCORE, type EpisodeOutcome } from '../outcomes.js';
import { ARCHIVE_FORMAT, type ArchivedError, type ArchivedWorkspace, type EpisodeEnd } from './format.js';
import type { ArchiveWriter, Tenant } from './writer.js';

export interface RecorderOptions {
  /** One episode's serialised bytes beyond this: the episode is dropped (episode_too_large). */
  maxEpisodeBytes: number;
  /** A final workspace larger than this is recorded as omitted (its size only). */
  maxWorkspaceBytes: number;
}

interface SessionInfo {
  kwargs: Record<string, unknown>;
  connection_id: string;
  /** Whose memory share the session's episodes use (its token's, else its connection's). */
  tenant: Tenant;
  /** The line's opening up to kwargs, serialised on the session's first finished episode. */
  prefix: string | null;
}

interface Episode {
  id: string;
  session_id: string;
  env_id: string;
  info: SessionInfo | undefined;
  tenant: Tenant;
  seed: number | undefined;
  options: Record<string, unknown>;
  started: number;
  ended: number;
  /** The reset field, serialised; its info kept for the task (read at the end). */
  reset: string | null;
  resetInfo: Record<string, unknown> | null;
  resetMs: number;
  /** The steps and the request errors, serialised (JSON objects without the enclosing array). */
  parts: string[];
  errorParts: string[];
  bytes: number;
  ret: number;
  length: number;
  grade: unknown;
  grader: unknown;
  /** The last step's info.score, for the episode's score (episodeScore). */
  lastInfo: Record<string, unknown> | null;
  /** Request errors (codes only) for a record without steps, whose actions are left out. */
  errorsWithoutActions: ArchivedError[];
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
  stepsOmitted: StepsOmittedReason | null;
}

type StepsOmittedReason = 'memory' | 'tenant_memory' | 'episode_too_large';

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

/** JSON text of a value; `null` where JSON.stringify gives nothing (undefined, a function). */
function json(v: unknown): string {
  return JSON.stringify(v) ?? 'null';
}

/** A number as JSON writes it (non-finite: null). */
function num(n: number): string {
  return Number.isFinite(n) ? String(n) : 'null';
}

function strOrNull(v: unknown): string | null {
  return typeof v === 'string' ? v : null;
}

function isEmpty(o: Record<string, unknown>): boolean {
  for (const _ in o) return false;
  return true;
}

/** Date.prototype.toISOString for ms since the epoch, with the date and minute formatted once per minute. */
let isoMinute = -1;
let isoPrefix = '';
export function isoTime(ms: number): string {
  const t = Math.floor(ms);
  const minute = Math.floor(t / 60_000);
  if (minute !== isoMinute) {
    isoMinute = minute;
    isoPrefix = new Date(minute * 60_000).toISOString().slice(0, 17);
  }
  const rest = t - minute * 60_000;
  const sec = Math.floor(rest / 1000);
  const milli = rest - sec * 1000;
  return `${isoPrefix}${sec < 10 ? '0' : ''}${sec}.${milli < 10 ? '00' : milli < 100 ? '0' : ''}${milli}Z`;
}

export class EpisodeRecorder implements EpisodeObserver {
  readonly name = 'archive';
  private readonly sessions = new Map<string, SessionInfo>();
  private readonly episodes = new Map<string, Episode>();
  /** The tenant of sessions opened before the recorder listened (never left). */
  private readonly unknownTenant: Tenant;

  constructor(
    private readonly writer: ArchiveWriter,
    private readonly opts: RecorderOptions,
  ) {
    this.unknownTenant = writer.tenant('unknown');
  }

  onOpen(e: OpenEvent): void {
    const prev = this.sessions.get(e.session_id);
    if (prev) this.writer.leave(prev.tenant);
    const tenant = this.writer.tenant(e.principal ?? `conn:${e.connection_id}`);
    this.sessions.set(e.session_id, { kwargs: e.kwargs, connection_id: e.connection_id, tenant, prefix: null });
  }

  onReset(e: ResetEvent): void {
    const prev = this.episodes.get(e.session_id);
    if (prev) this.finish(prev, 'abandoned', e.t);
    const ep = this.newEpisode(e.episode_id, e.session_id, e.env_id, e.seed, e.options, e.t - e.duration_ms);
    this.episodes.set(e.session_id, ep);
    ep.resetInfo = e.info;
    ep.resetMs = round3(e.duration_ms);
    // One JSON.stringify of a small object: one flat string (template concatenation around three
    // stringify calls made a tree of pieces, flattened again when written: twice the young garbage).
    const text = JSON.stringify({ observation: e.observation ?? null, info: stripInfo(e.info), duration_ms: ep.resetMs });
    if (this.book(ep, text.length)) ep.reset = text;
  }

  onStep(e: StepEvent): void {
    const ep = this.episodes.get(e.session_id);
    if (ep === undefined || ep.id !== e.episode_id) return;
    // A dropped episode serialises nothing more (it keeps its counts for the record without steps).
    if (!ep.dropped) {
      // Non-finite numbers become null, as JSON.stringify writes them; undefined values null, not absent.
      const text = JSON.stringify({
        step: e.step_index,
        action: e.action ?? null,
        observation: e.observation ?? null,
        reward: e.reward,
        terminated: e.terminated,
        truncated: e.truncated,
        info: stripInfo(e.info),
        duration_ms: round3(e.duration_ms),
        t: e.t,
      });
      if (this.book(ep, text.length)) ep.parts.push(text);
    }
    ep.ret += e.reward;
    ep.length++;
    ep.lastInfo = e.info;
    if (e.info.grade !== undefined) {
      ep.grade = e.info.grade;
      ep.grader = e.info.grader ?? null;
    }
    if (e.terminated || e.truncated) this.finish(ep, e.terminated ? 'terminated' : 'truncated', e.t);
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
    // A failed step's action is archived with its error (the agent's own text; error messages are the
    // server's): an invalid or timed-out action is part of the trajectory a failure analysis needs.
    const withAction: ArchivedError = e.op === 'step' && e.action !== undefined ? { ...err, action: e.action } : err;
    if (e.error.scope === 'session') {
      ep.error = ep.dropped ? err : withAction;
      this.finish(ep, 'error', e.t);
      return;
    }
    ep.errorsWithoutActions.push(err);
    if (ep.dropped) return;
    const text = json(withAction);
    if (this.book(ep, text.length)) ep.errorParts.push(text);
  }

  onClose(e: CloseEvent): void {
    const info = this.sessions.get(e.session_id);
    this.sessions.delete(e.session_id);
    // The tenant is forgotten once its episodes' bytes are released too (writer.forget).
    if (info) this.writer.leave(info.tenant);
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

  /** Episodes still running (they are archived as `closed` when their session closes). */
  get running(): number {
    return this.episodes.size;
  }

  private newEpisode(id: string, session: string, env: string, seed: number | undefined, options: Record<string, unknown>, started: number): Episode {
    const info = this.sessions.get(session);
    return {
      id,
      session_id: session,
      env_id: env,
      info,
      tenant: info?.tenant ?? this.unknownTenant,
      seed,
      options,
      started,
      ended: started,
      reset: null,
      resetInfo: null,
      resetMs: 0,
      parts: [],
      errorParts: [],
      bytes: 0,
      ret: 0,
      length: 0,
      grade: null,
      grader: null,
      lastInfo: null,
      errorsWithoutActions: [],
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
    if (!ep.dropped) this.emit(ep);
    if (ep.dropped && ep.stepsOmitted !== null) this.emitWithoutSteps(ep);
  }

  /** Books bytes for an episode; on refusal the episode is dropped (its bytes released, counted). */
  private book(ep: Episode, n: number): boolean {
    if (ep.bytes + n > this.opts.maxEpisodeBytes) return this.dropEpisode(ep, 'episode_too_large');
    const refused = this.writer.book(ep.tenant, n);
    if (refused !== null) return this.dropEpisode(ep, refused);
    ep.bytes += n;
    return true;
  }

  private dropEpisode(ep: Episode, reason: StepsOmittedReason): false {
    ep.dropped = true;
    ep.stepsOmitted = reason;
    this.writer.unbook(ep.tenant, ep.bytes);
    ep.bytes = 0;
    ep.parts = [];
    ep.errorParts = [];
    ep.reset = null;
    ep.workspace = null;
    this.writer.drop(reason, ep.id, 1, ep.tenant);
    return false;
  }

  private emit(ep: Episode): void {
    const pieces = this.pieces(ep, false);
    let chars = 0;
    for (let i = 0; i < pieces.length; i++) chars += (pieces[i] as string).length;
    if (!this.book(ep, chars - ep.bytes)) return;
    ep.parts = [];
    ep.errorParts = [];
    ep.workspace = null;
    this.writer.enqueuePieces(pieces, ep.bytes, ep.tenant);
  }

  /**
   * The record of an episode whose steps passed the per-episode cap: everything but its steps, reset
   * observation, kwargs, options, workspace and failed actions (the fields whose size the client or
   * agent controls), with steps_omitted. Booked with the writer's summary headroom (else it is lost,
   * counted as dropped).
   */
  private emitWithoutSteps(ep: Episode): void {
    const line = this.pieces(ep, true).join('');
    if (line.length > this.opts.maxEpisodeBytes || !this.writer.bookSummary(ep.tenant, line.length)) return;
    this.writer.enqueue(line, line.length, ep.tenant);
  }

  /** The line's opening: format, server, session, connection, env and kwargs (fixed for a session). */
  private prefix(ep: Episode, withoutSteps: boolean): string {
    const info = ep.info;
    if (!withoutSteps && info?.prefix) return info.prefix;
    const p =
      `{"format":"${ARCHIVE_FORMAT}","server":${json({ instance: this.writer.instance, version: SERVER_VERSION })},"session_id":${json(ep.session_id)}` +
      `,"connection_id":${json(info?.connection_id ?? null)},"env_id":${json(ep.env_id)},"kwargs":${withoutSteps ? '{}' : json(info?.kwargs ?? {})}`;
    if (!withoutSteps && info) info.prefix = p;
    return p;
  }

  /**
   * One EpisodeRecord (format.ts) as the pieces of a JSON line, written field by field around the
   * serialised parts: the writer copies them into its chunk buffer one by one, so the line is never
   * built (and flattened) as one more string of the episode's size.
   */
  private pieces(ep: Episode, withoutSteps: boolean): string[] {
    const resetInfo = ep.resetInfo ?? {};
    const taskId = resetInfo.task_id;
    const task = typeof taskId === 'string' ? json({ id: taskId, split: strOrNull(resetInfo.split), content_hash: strOrNull(resetInfo.task_hash) }) : 'null';
    const o = outcomeOf(ep);
    let reset = 'null';
    if (withoutSteps && ep.resetInfo !== null) reset = `{"observation":null,"info":${json(stripInfo(ep.resetInfo))},"duration_ms":${num(ep.resetMs)}}`;
    else if (ep.reset !== null) reset = ep.reset;
    const grade = ep.grade === null ? 'null' : json(stripInfo({ grade: ep.grade }).grade);
    let tail = '';
    if (ep.error) tail += `,"error":${json(ep.error)}`;
    if (ep.close_reason !== undefined) tail += `,"close_reason":${json(ep.close_reason)}`;
    if (ep.workspace && !withoutSteps) tail += `,"final_workspace":${json(this.workspaceOf(ep.workspace))}`;
    if (withoutSteps && ep.stepsOmitted !== null) tail += `,"steps_omitted":{"reason":"${ep.stepsOmitted}","steps":${ep.length}}`;
    const errors = withoutSteps ? json(ep.errorsWithoutActions) : ep.errorParts.length === 0 ? '[]' : `[${ep.errorParts.join(',')}]`;
    const out = [
      this.prefix(ep, withoutSteps),
      `,"episode_id":${json(ep.id)},"task":${task},"seed":${ep.seed ?? 'null'},"options":${withoutSteps || isEmpty(ep.options) ? '{}' : json(ep.options)}` +
        `,"started_at":"${isoTime(ep.started)}","ended_at":"${isoTime(ep.ended)}","end":"${ep.end}","outcome":"${o.outcome}","score":${num(o.score)},"success":${o.success}` +
        `,"return":${num(ep.ret)},"length":${ep.length},"reset":`,
      reset,
      `,"request_errors":${errors},"grade":${grade},"grader":${json(ep.grader)}${tail},"steps":[`,
    ];
    if (!withoutSteps) {
      const parts = ep.parts;
      for (let i = 0; i < parts.length; i++) {
        if (i > 0) out.push(',');
        out.push(parts[i] as string);
      }
    }
    out.push(']}');
    return out;
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
