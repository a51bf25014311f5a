// Opening sessions: `make` (one session) and `group` (`size` sessions admitted as one unit, PROTOCOL.md
// §6a) share one pre-check, one capacity reservation and one way to fail. A refused or failed open is
// told to the episode observers and answered with its error; sessions that opened for a connection that
// went away meanwhile are closed. New operations that open sessions (fork, restore) come through here.
import { randomBytes } from 'node:crypto';
import { clipPath, protocolError as err, type GroupRequest, type MakeRequest } from '#protocol/index.js';
import type { RegisteredEnv } from '#envs/registry.js';
import type { EnvRegistry } from '#envs/registry.js';
import { CAPACITY_RETRY_MS } from '../admission/capacity-ledger.js';
import { AdmissionRefused, ProtocolError } from '../errors.js';
import type { SchedulerDriver, SchedulingAsk, SchedulingParams } from '../admission/scheduler-driver.js';
import { Session, type SessionHost } from '../session/session.js';
import { SessionAdmission } from '../admission/session-admission.js';
import type { Handshake } from './handshake.js';
import type { Reservation, SessionBook } from './session-book.js';

/** Frames of a make at most this big have their kwargs logged whole at info; larger ones by key only. */
const MAX_LOGGED_KWARGS_FRAME = 2048;
/** At most this many kwargs keys (each clipped) in a make's log line. */
const MAX_LOGGED_KWARGS_KEYS = 16;

/** A summary of kwargs for the info log: bounded whatever the client sent. */
function kwargsForLog(kwargs: Record<string, unknown>, frameBytes: number): Record<string, unknown> {
  if (frameBytes <= MAX_LOGGED_KWARGS_FRAME) return { kwargs };
  const keys = Object.keys(kwargs);
  return {
    kwargs_keys: keys.slice(0, MAX_LOGGED_KWARGS_KEYS).map((k) => (k.length > 64 ? `${k.slice(0, 63)}…` : k)),
    kwargs_key_count: keys.length,
    frame_bytes: frameBytes,
  };
}

/** A make or reset on a draining server (SIGTERM with drain_grace_ms): the episode belongs elsewhere. */
export function drainingRefusal(): ProtocolError {
  const reason = 'server is draining: no new sessions or episodes';
  return err('CAPACITY', { reason }, { reason, limit: 'draining', retry_after_ms: CAPACITY_RETRY_MS });
}

const newSessionId = (): string => 's_' + randomBytes(18).toString('base64url');

/** What opening sessions reads of the server (ServerCore satisfies it). */
export interface OpenerServer extends SessionHost {
  readonly registry: EnvRegistry;
  readonly draining: boolean;
  readonly sandbox:
    | (SessionHost['sandbox'] & { unsupported(req: NonNullable<RegisteredEnv['def']['sandbox']>): string | null; readonly scheduler?: SchedulerDriver | null })
    | null;
}

/** What opening sessions needs of its connection. */
export interface OpenerHost {
  readonly id: string;
  /** The connection's sessions (reservations follow them through a resume). */
  readonly book: SessionBook;
  readonly identity: Pick<Handshake, 'tenant' | 'schedClient'>;
  /** The connection now holding the sessions went away with nothing to resume: nobody to answer. */
  gone(): boolean;
  reply(id: number, result: object, bin: boolean): void;
  fail(id: number, e: ProtocolError, bin: boolean): void;
  event(name: string, session: string | undefined, details: Record<string, unknown>): void;
  serverClose(sessionId: string, reason: string, code: 'SANDBOX_ERROR' | 'PREEMPTED'): Promise<void>;
}

/** An open request that passed the pre-check: its env, its capacity slots and its scheduling parameters. */
interface Accepted {
  entry: RegisteredEnv & { def: RegisteredEnv['def'] };
  kwargs: Record<string, unknown>;
  reservation: Reservation;
  /** With a scheduler: the ask resolved against the client's grant (null without one). */
  sched: { drv: SchedulerDriver; client: string; grant: ReturnType<SchedulerDriver['clientOf']>['grant']; params: SchedulingParams } | null;
}

export class SessionOpener {
  constructor(
    private readonly server: OpenerServer,
    private readonly host: OpenerHost,
  ) {}

  private scheduler(): SchedulerDriver | null {
    return this.server.sandbox?.scheduler ?? null;
  }

  /** A make or group refused or failed: its error reply, told to the episode observers first (no session exists). */
  private failed(id: number, envId: string, e: ProtocolError, bin: boolean, t0: number): void {
    const obs = this.server.observers;
    if (obs.active) obs.error({ session_id: null, env_id: envId, episode_id: null, op: 'make', error: e, duration_ms: performance.now() - t0, t: Date.now() });
    this.host.fail(id, e, bin);
  }

  /**
   * The one pre-check of every open, in this order: the env exists, the server is not draining, what
   * only a group needs (a scheduler, a sandboxed env, a size within max_group_size), the session caps
   * (the slots are reserved here, before any await), kwargs against the env's schema (details.path a
   * JSON Pointer into kwargs), a sandbox for an env that needs one, the scheduling class the token was
   * granted (refused alike for an env that needs no sandbox). A ProtocolError gives the slots back.
   */
  private accept(m: MakeRequest | GroupRequest, n: number): Accepted | ProtocolError {
    const server = this.server;
    const drv = this.scheduler();
    const envId = m.env_id;
    if (m.type === 'group' && drv === null) {
      const reason = 'this server has no admission scheduler (capabilities.scheduling is false)';
      return err('UNSUPPORTED', { reason }, { reason });
    }
    const entry = server.registry.get(envId);
    if (!entry) return err('UNKNOWN_ENV', { env_id: envId }, { env_id: envId });
    if (server.draining) return drainingRefusal();
    if (m.type === 'group' && drv !== null) {
      if (!entry.def.sandbox) {
        const reason = `env '${envId}' needs no sandbox: make its sessions one by one`;
        return err('INVALID_ARGUMENT', { path: '/env_id', reason }, { path: '/env_id', reason });
      }
      if (n > drv.maxGroupSize) {
        const reason = `a group of ${n} exceeds limits.max_group_size (${drv.maxGroupSize})`;
        return err('INVALID_ARGUMENT', { path: '/size', reason }, { path: '/size', reason, max_group_size: drv.maxGroupSize });
      }
    }
    const reservation = this.host.book.reserve(n);
    if (reservation instanceof ProtocolError) return reservation;
    const refused = (e: ProtocolError): ProtocolError => {
      reservation.cancel();
      return e;
    };
    const kwargs = m.kwargs ?? {};
    if (entry.validateKwargs && !entry.validateKwargs(kwargs)) {
      // details.path is a JSON Pointer into kwargs ("" = kwargs itself).
      const e = entry.validateKwargs.errors?.[0];
      // Property names are the client's text: clipped, never echoed whole (PROTOCOL.md §2).
      const extra = e?.keyword === 'additionalProperties' ? clipPath(`/${String((e.params as { additionalProperty?: string }).additionalProperty)}`) : '';
      const path = clipPath(`${e?.instancePath ?? ''}${extra}`);
      const reason = e ? `${e.message ?? 'invalid'}${extra ? ` ('${extra.slice(1)}')` : ''}` : 'invalid kwargs';
      return refused(err('INVALID_ARGUMENT', { path: path || '/', reason }, { path, reason }));
    }
    if (entry.def.sandbox && !server.sandbox) {
      const reason = `env '${envId}' needs a sandbox and this server has no sandbox driver configured`;
      return refused(err('UNSUPPORTED', { reason }, { reason }));
    }
    const cannot = entry.def.sandbox && server.sandbox ? server.sandbox.unsupported(entry.def.sandbox) : null;
    if (cannot) {
      const reason = `env '${envId}' cannot be served here: ${cannot}`;
      return refused(err('UNSUPPORTED', { reason }, { reason }));
    }
    if (drv === null) return { entry, kwargs, reservation, sched: null };
    const { client, grant } = this.host.identity.schedClient(drv);
    try {
      return { entry, kwargs, reservation, sched: { drv, client, grant, params: drv.resolve(grant, m as SchedulingAsk) } };
    } catch (e) {
      if (e instanceof AdmissionRefused) return refused(e.error);
      reservation.cancel();
      throw e;
    }
  }

  /** Where a session's scheduling events and preemption go: the connection holding it now. */
  private admissionSink(sessionId: string) {
    return {
      event: (name: 'queued' | 'admitted', details: Record<string, unknown>) => this.host.event(name, sessionId, details),
      preempt: (reason: string) => void this.host.serverClose(sessionId, reason, 'PREEMPTED'),
    };
  }

  private openOne(a: Accepted, sessionId: string, admission: SessionAdmission | null): Promise<Session | ProtocolError> {
    return Session.open(sessionId, a.entry, a.kwargs, this.server, (reason) => void this.host.serverClose(sessionId, reason, 'SANDBOX_ERROR'), admission);
  }

  /**
   * The sessions opened (or one failed): all are booked and answered, or, when one failed or the
   * connection went away meanwhile, those that opened are closed, the slots go back, and the failure
   * (if any) is answered. True when booked.
   */
  private settle(
    id: number,
    m: MakeRequest | GroupRequest,
    a: Accepted,
    opened: readonly (Session | ProtocolError)[],
    bin: boolean,
    t0: number,
  ): opened is Session[] {
    const failed = opened.find((o): o is ProtocolError => o instanceof ProtocolError);
    if (failed || this.host.gone()) {
      // All or nothing: the members that opened are closed (their sandboxes and units go back with them).
      for (const o of opened) if (o instanceof Session) void o.close();
      a.reservation.cancel();
      if (failed) this.failed(id, m.env_id, failed, bin, t0);
      return false;
    }
    const sessions = opened as Session[];
    a.reservation.book(sessions);
    const obs = this.server.observers;
    if (obs.active)
      for (const s of sessions)
        obs.open({ session_id: s.id, env_id: m.env_id, kwargs: a.kwargs, connection_id: this.host.id, principal: this.host.identity.tenant(), t: Date.now() });
    return true;
  }

  async make(m: MakeRequest, bin: boolean, frameBytes: number): Promise<void> {
    const t0 = performance.now();
    const a = this.accept(m, 1);
    if (a instanceof ProtocolError) return this.failed(m.id, m.env_id, a, bin, t0);
    const sessionId = newSessionId();
    const admission =
      a.sched !== null && a.entry.def.sandbox !== undefined
        ? new SessionAdmission(a.sched.drv, a.sched.client, a.sched.grant, a.sched.params, this.admissionSink(sessionId))
        : null;
    const opened = await this.openOne(a, sessionId, admission);
    if (!this.settle(m.id, m, a, [opened], bin, t0)) return;
    const s = opened as Session;
    // Whole kwargs only when small: a 15 MB kwargs must not become a 15 MB log line.
    s.logger.info(kwargsForLog(a.kwargs, frameBytes), 'session made');
    if (frameBytes > MAX_LOGGED_KWARGS_FRAME) s.logger.debug({ kwargs: a.kwargs }, 'session kwargs');
    this.host.reply(m.id, { session: sessionId, env_spec: a.entry.spec }, bin);
  }

  /**
   * group: `size` sessions of one env admitted as one unit. The units are admitted first (all at once,
   * never part), then the sessions are made; each member holds its unit until it closes, and the last
   * close sends group_complete. A member that fails to make releases its unit; the others are closed and
   * the group is answered with that error (all or nothing).
   */
  async group(m: GroupRequest, bin: boolean): Promise<void> {
    const t0 = performance.now();
    const { id, size } = m;
    const a = this.accept(m, size);
    if (a instanceof ProtocolError) return this.failed(id, m.env_id, a, bin, t0);
    const { drv, client, grant, params } = a.sched as NonNullable<Accepted['sched']>;
    const gid = 'g_' + randomBytes(12).toString('base64url');
    const ids = Array.from({ length: size }, newSessionId);
    // Preempting a group reclaims all of it: every member is closed with PREEMPTED.
    const preempt = (forId: string) =>
      ids.forEach((sid) => void this.host.serverClose(sid, `preempted: the group's sandboxes were reclaimed for higher-priority work (${forId})`, 'PREEMPTED'));
    const gone = new AbortController();
    const watch = setInterval(() => {
      if (this.host.gone()) gone.abort();
    }, 500);
    watch.unref();
    try {
      await drv.request(
        { id: gid, client, cls: params.cls, queueTimeoutMs: params.queueTimeoutMs, units: size, preemptible: params.preemptible },
        {
          queued: (p, cls) =>
            this.host.event('queued', undefined, {
              request: id,
              position: p.position,
              units_ahead: p.units_ahead,
              estimated_wait_ms: p.estimated_wait_ms,
              priority: cls,
            }),
          admitted: (waited) => this.host.event('admitted', undefined, { request: id, waited_ms: waited }),
          preempt,
        },
        gone.signal,
      );
    } catch (e) {
      a.reservation.cancel();
      if (e instanceof AdmissionRefused) return this.failed(id, m.env_id, e.error, bin, t0);
      return; // the connection went away while the group waited: nobody to answer
    } finally {
      clearInterval(watch);
    }
    let answered = false;
    // Only for a group that was answered: a group refused half-made completes silently.
    const onLast = () => {
      if (answered) this.host.event('group_complete', undefined, { group: gid, sessions: ids });
    };
    const opened = await Promise.all(
      ids.map((sid, member) => this.openOne(a, sid, new SessionAdmission(drv, client, grant, params, this.admissionSink(sid), { id: gid, member, onLast }))),
    );
    if (!this.settle(id, m, a, opened, bin, t0)) return;
    answered = true;
    this.server.log.info({ group: gid, size, env: m.env_id, cls: params.cls }, 'group made');
    this.host.reply(id, { group: gid, sessions: ids, env_spec: a.entry.spec }, bin);
  }
}
