// Which steps the episode hook times. A step's start is read anyway (it is its deadline's start, see
// deadline.ts); its end costs one more clock read, ~0.05-0.15 µs in a VM, which is several percent of
// a step of an in-process env (a no-op step costs the server ~3 µs in a batch) and nothing against a
// step that waits for a sandbox. So, unless an observer needs every step timed (the archive records
// each step's duration), the end is read for:
//  - every step that waited for the event loop (its result came in a later loop iteration than its
//    start: a sandbox, any I/O or timer), and
//  - of the steps that an env completed within the iteration they started in (in-process envs such as
//    math-v0, a no-op), the first that starts SYNC_SAMPLE_MS or more after the env's last timed one:
//    at most one per env per millisecond, chosen by start time only, so the choice does not depend on
//    the step's own duration. Such steps block the loop, so an env whose synchronous steps each take
//    SYNC_SAMPLE_MS or more has every one timed.
// The step-duration histogram then holds the timed steps; `sandgym_steps_total` counts every step.

/** Synchronous steps of one env are timed at most once per this many ms (clock reads per env: <= 1,000/s). */
export const SYNC_SAMPLE_MS = 1;

let turn = 0;
let armed = false;
function nextTurn(): void {
  turn++;
  armed = false;
}

/**
 * The number of the event-loop iteration running now, for a step starting: the first call in an
 * iteration arms a setImmediate that moves the number on (one per iteration, not per step), so a
 * step whose result arrives after it sees another number. A step started in a check phase (from another
 * setImmediate) whose result comes in the next iteration's timers or poll phase, before that check phase,
 * still sees its own number: it is treated as synchronous and sampled (a histogram with fewer such steps;
 * every step is still counted, and an observer that needs every step timed gets them all).
 */
export function loopTurn(): number {
  if (!armed) {
    armed = true;
    setImmediate(nextTurn);
  }
  return turn;
}

/** Is this still the iteration `t` (from loopTurn) ran in? */
export function sameTurn(t: number): boolean {
  return t === turn;
}

/** One env's sampling state: when its next synchronous step may be timed (monoNow() ms, deadline.ts). */
export class SyncSampler {
  private next = Number.NEGATIVE_INFINITY;

  /** Whether a synchronous step that started at `t0` is timed (the first one always is). */
  take(t0: number): boolean {
    if (t0 < this.next) return false;
    this.next = t0 + SYNC_SAMPLE_MS;
    return true;
  }

  /** Forgets the last timed step (the next one is timed). */
  reset(): void {
    this.next = Number.NEGATIVE_INFINITY;
  }
}

/** The samplers of one server, one per env id (held by EpisodeObservers; a session keeps its env's). */
export class StepSampling {
  private readonly byEnv = new Map<string, SyncSampler>();

  samplerFor(envId: string): SyncSampler {
    let s = this.byEnv.get(envId);
    if (s === undefined) {
      s = new SyncSampler();
      this.byEnv.set(envId, s);
    }
    return s;
  }
}
