// A session's side of the admission scheduler (PROTOCOL.md §6a): who the session is to the scheduler
// (client key and grant), what its requests asked for (make's defaults, each reset's override), which
// request is waiting now (its events name it), and the reset deadline that does not count the queue.
// Built by the connection at make; read by the sandbox adapter when the env takes its sandbox.
import type { SchedulingGrant } from '../config.js';
import { DeadlineExceeded, type DeadlineSweeper } from '../session/deadline.js';
import { AdmissionRefused } from '../errors.js';
import type { AdmissionListener, SchedulerDriver, SchedulingAsk, SchedulingParams } from './scheduler-driver.js';

/** Where a session's scheduling events go (the connection). */
export interface AdmissionSink {
  event(name: 'queued' | 'admitted', details: Record<string, unknown>): void;
  /** Close the session with PREEMPTED (reply to a running request, else a session_closed event). */
  preempt(reason: string): void;
}

const swallow = (): undefined => undefined;

export class SessionAdmission {
  /** The frame whose request waits now (reset, or the batch holding it); its events name it. */
  requestId: number | null = null;
  params: SchedulingParams;
  /** Set while a request of this session waits in the queue (the reset deadline is paused meanwhile). */
  private waitListeners: ((waiting: boolean) => void)[] = [];
  readonly listener: AdmissionListener;

  constructor(
    readonly driver: SchedulerDriver,
    readonly client: string,
    readonly grant: Required<SchedulingGrant>,
    /** The session's defaults (make's fields with the grant applied). */
    readonly base: SchedulingParams,
    sink: AdmissionSink,
    /** A member of a group: it holds the group's unit `member` for its whole life. */
    readonly group: { id: string; member: number; onLast: () => void } | null = null,
  ) {
    this.params = base;
    this.listener = {
      queued: (p, cls) => {
        if (this.requestId === null) return;
        sink.event('queued', {
          request: this.requestId,
          position: p.position,
          units_ahead: p.units_ahead,
          estimated_wait_ms: p.estimated_wait_ms,
          priority: cls,
        });
      },
      admitted: (waited) => {
        if (this.requestId !== null) sink.event('admitted', { request: this.requestId, waited_ms: waited });
      },
      preempt: (forId) => sink.preempt(`preempted: its sandbox was reclaimed for higher-priority work (${forId})`),
    };
  }

  /** A reset begins: its fields override the session's defaults for this episode. Throws the wire error. */
  begin(requestId: number, ask: SchedulingAsk): void {
    this.requestId = requestId;
    try {
      this.params = this.driver.resolve(this.grant, ask, this.base);
    } catch (e) {
      if (e instanceof AdmissionRefused) throw e.error;
      throw e;
    }
  }

  /** The sandbox adapter says when a request of this session starts and stops waiting in the queue. */
  waiting(on: boolean): void {
    for (const l of this.waitListeners) l(on);
  }

  /**
   * The reset's deadline, paused while its sandbox waits in the admission queue: the wait has its own
   * deadline (queue_timeout_ms, answered CAPACITY), and reset_timeout_ms stays the env's own time. The
   * sweeper still holds the call (with the outer bound, ms + queue timeout) so a close abandons it.
   */
  race<T>(call: Promise<T>, ms: number, deadlines: DeadlineSweeper, owner: object): Promise<T> {
    const outer = deadlines.race(call, ms + this.params.queueTimeoutMs, 'reset', owner);
    return new Promise<T>((resolve, reject) => {
      let left = ms;
      let since = performance.now();
      let timer: NodeJS.Timeout | null = null;
      const fire = (): void => {
        done();
        reject(new DeadlineExceeded('reset', ms, call.then(swallow, swallow)));
      };
      const arm = (): void => {
        timer = setTimeout(fire, Math.max(0, left));
        timer.unref();
      };
      const onWait = (on: boolean): void => {
        if (on && timer) {
          clearTimeout(timer);
          timer = null;
          left -= performance.now() - since;
        } else if (!on && !timer) {
          since = performance.now();
          arm();
        }
      };
      const done = (): void => {
        if (timer) clearTimeout(timer);
        timer = null;
        this.waitListeners = this.waitListeners.filter((l) => l !== onWait);
      };
      this.waitListeners.push(onWait);
      arm();
      outer.then(
        (v) => {
          done();
          resolve(v);
        },
        (e: unknown) => {
          done();
          reject(e);
        },
      );
    });
  }
}
