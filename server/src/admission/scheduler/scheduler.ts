// The admission scheduler's core (issue #18, docs/SCHEDULING.md): sans-I/O, synchronous, no timers.
// Time comes in as an argument (`now`, ms on any monotonic clock the caller picks), events come in as
// method calls (submit, release, creationFailed, cancel) and what to do comes out as decisions
// (`schedule(now)`: admit, expire, preempt). The wiring (next step) carries the decisions out with
// real sandboxes and turns them into protocol events and errors; this module never touches either.
//
// Order: strict priority between classes; start-time fair queuing (SFQ) between clients inside a
// class, so each backlogged client gets capacity in proportion to its weight; FIFO inside one
// client's lane of a class (tags only grow within a lane). The head of the highest non-empty class is
// a reservation: when it does not fit, nothing behind it is admitted (a group of N cannot starve
// behind a stream of singles), and lower-class preemptible holders are reclaimed for it when that
// alone makes it fit.
// Over 500 lines on purpose: the sans-I/O core's decisions (priority, fair share, groups, preemption,
// retries) interlock over one queue state, and its tests drive it as one object.
import { DuplicateRequestError, GroupTooLargeError, SchedulerInputError, UnknownRequestError } from './errors.js';
import { IndexedHeap } from './heap.js';

export interface SchedulerConfig {
  /** Units (sandboxes) that may be held at once. */
  capacity: number;
  /** Priority classes, highest first, e.g. ['eval', 'train-batch-closing', 'train', 'background']. */
  classes: readonly string[];
  /** Requests queued over all clients beyond which submit answers queue_full (CAPACITY at once). */
  maxQueued: number;
  /** Requests one client may have queued (default: maxQueued). */
  maxQueuedPerClient?: number;
  /** Creation retries per admitted request before it gives up (default 2). */
  retryBudget?: number;
  /** Largest group (default: capacity; never more than capacity). */
  maxGroupSize?: number;
  /** Weight of the newest service time in the EWMA (0 < alpha <= 1, default 0.2). */
  ewmaAlpha?: number;
  /** Client key -> weight (> 0, finite). Clients not listed get defaultWeight. */
  weights?: Readonly<Record<string, number>>;
  defaultWeight?: number;
  /** Classes whose requests are preemptible whatever the request says (e.g. ['background']). */
  preemptibleClasses?: readonly string[];
  /**
   * How long a request waits before holders are preempted for it (default 0). With thousands of
   * sandboxes one completes every few milliseconds: a short grace lets the waiter take a freed one
   * instead of throwing away an episode's work. nextDeadline() includes the end of the grace.
   */
  preemptGraceMs?: number;
}

export interface SubmitRequest {
  /** Unique among queued and admitted requests. */
  id: string;
  /** Who is served fairly: `token:<principal>` or `conn:<group>` (docs/SCHEDULING.md §client identity). */
  client: string;
  /** A class from config.classes, as the operator granted it to the client's token: never the client's claim. */
  cls: string;
  /** Absolute time (same clock as `now`) after which a still-queued request expires; Infinity for none. */
  deadline: number;
  /** Sandboxes needed at once: 1 for an episode, N for a group admitted all or nothing. */
  units?: number;
  /** May be reclaimed for a higher class (also true for every request of a preemptibleClasses class). */
  preemptible?: boolean;
}

export type SubmitResult =
  | { ok: true }
  | { ok: false; reason: 'queue_full' | 'client_queue_full'; limit: number }
  | { ok: false; reason: 'deadline_passed'; limit?: undefined };

export type Decision =
  /** Create (or hand out) `units` sandboxes for this request now; `attempt` counts creation retries. */
  | { kind: 'admit'; id: string; units: number; attempt: number; waited_ms: number }
  /** Answer CAPACITY: the deadline passed in the queue, or (after a capacity cut) it can never fit. */
  | { kind: 'expire'; id: string; reason: 'deadline' | 'too_large'; waited_ms: number }
  /** Reclaim this holder's sandboxes (error PREEMPTED to its client), then `release` it. */
  | { kind: 'preempt'; id: string; for: string };

export type FailureOutcome =
  /** Back in the queue at its original place (virtual start time); the next schedule() may admit it again. */
  | { action: 'requeued'; attempt: number }
  /** A group keeps its units (all or nothing): create that one member's sandbox again at once. */
  | { action: 'recreate'; attempt: number }
  /**
   * Out of retries or of time: answer SANDBOX_ERROR (retryable). A single request's unit is free again; a
   * group member gives back only its own unit (the other members keep theirs) and `last` says whether it was
   * the group's last one (the group then completes, as on the last releaseMember).
   */
  | { action: 'give_up'; reason: 'retries_exhausted' | 'deadline'; last: boolean };

export interface Progress {
  state: 'queued' | 'admitted';
  /** Requests that will be considered before this one (higher classes, then earlier tags in its class). */
  position: number;
  /** Sandbox units those requests need. */
  units_ahead: number;
  /** Fluid estimate from the EWMA of observed hold times; null before any completion was observed. */
  estimated_wait_ms: number | null;
}

export interface SchedulerStats {
  capacity: number;
  held: number;
  reclaiming: number;
  queued: number;
  queued_by_class: Record<string, number>;
  ewma_service_ms: number | null;
  /** (client, class) lanes kept: active ones plus idle ones whose fairness tag still matters. */
  lanes: number;
}

const QUEUED = 0;
const ADMITTED = 1;
const GONE = 2;

class Lane {
  readonly items: Entry[] = [];
  head = 0;
  live = 0;
  /** SFQ finish tag of the last request this lane enqueued. */
  finish = 0;
  hpos = -1;
  constructor(
    readonly client: string,
    readonly cls: number,
    readonly key: string,
    public weight: number,
  ) {}
}

class Entry {
  state = QUEUED;
  retries = 0;
  admittedAt = 0;
  dpos = -1;
  reclaiming = false;
  /** Units still held (a group releases member by member). */
  outstanding = 0;
  prev: Entry | null = null;
  next: Entry | null = null;
  inHolders = false;
  /** A group's creation retries per member (allocated at its first failure). */
  memberRetries: number[] | null = null;
  constructor(
    readonly id: string,
    public lane: Lane,
    readonly units: number,
    readonly deadline: number,
    readonly preemptible: boolean,
    readonly start: number,
    readonly seq: number,
    readonly submittedAt: number,
  ) {}
}

const entryBefore = (x: Entry, y: Entry): boolean => x.start < y.start || (x.start === y.start && x.seq < y.seq);

class ClassQueue {
  /** SFQ virtual time: the start tag of the last request admitted from this class. */
  v = 0;
  queued = 0;
  queuedUnits = 0;
  /** Preemptible admitted holders not yet being reclaimed, oldest first (tail = most recently admitted). */
  holdersHead: Entry | null = null;
  holdersTail: Entry | null = null;
  preemptibleUnits = 0;
  readonly lanes = new IndexedHeap<Lane>(
    (a, b) => entryBefore(a.items[a.head] as Entry, b.items[b.head] as Entry),
    (l) => l.hpos,
    (l, i) => {
      l.hpos = i;
    },
  );
  constructor(
    readonly name: string,
    readonly preemptible: boolean,
  ) {}
}

function positiveInt(field: string, v: unknown, { allowZero = false } = {}): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < (allowZero ? 0 : 1)) {
    throw new SchedulerInputError(field, `must be an integer >= ${allowZero ? 0 : 1} (got ${String(v)})`);
  }
  return v;
}

function checkWeight(field: string, w: unknown): number {
  if (typeof w !== 'number' || !Number.isFinite(w) || w <= 0) throw new SchedulerInputError(field, `must be a finite number > 0 (got ${String(w)})`);
  return w;
}

/** A NaN `now` would compare false with every deadline and expire the whole queue: refuse it. */
function checkNow(now: unknown): void {
  if (typeof now !== 'number' || !Number.isFinite(now)) throw new SchedulerInputError('now', `must be a finite number (got ${String(now)})`);
}

function checkKey(field: string, v: unknown): string {
  if (typeof v !== 'string' || v.length === 0 || v.length > 512) throw new SchedulerInputError(field, 'must be a non-empty string of at most 512 characters');
  return v;
}

export class Scheduler {
  private capacity: number;
  private held = 0;
  private reclaimingUnits = 0;
  private queued = 0;
  private seq = 0;
  private ewma: number | null = null;
  private readonly classes: ClassQueue[];
  private readonly classIndex = new Map<string, number>();
  private readonly lanes = new Map<string, Lane>();
  private readonly entries = new Map<string, Entry>();
  private readonly queuedPerClient = new Map<string, number>();
  private readonly weights = new Map<string, number>();
  /** Lane count at which idle lanes are swept (one-shot clients, e.g. connection groups, must not pile up). */
  private sweepAt = 1024;
  private readonly deadlines = new IndexedHeap<Entry>(
    (a, b) => a.deadline < b.deadline || (a.deadline === b.deadline && a.seq < b.seq),
    (e) => e.dpos,
    (e, i) => {
      e.dpos = i;
    },
  );
  private readonly maxQueued: number;
  private readonly maxQueuedPerClient: number;
  private readonly retryBudget: number;
  private readonly maxGroupSize: number;
  private readonly alpha: number;
  private readonly defaultWeight: number;
  private readonly grace: number;
  /** When a waiter's preemption grace ends (Infinity: none pending). */
  private wakeAt = Number.POSITIVE_INFINITY;

  constructor(config: SchedulerConfig) {
    if (typeof config !== 'object' || config === null) throw new SchedulerInputError('config', 'must be an object');
    this.capacity = positiveInt('config.capacity', config.capacity, { allowZero: true });
    if (!Array.isArray(config.classes) || config.classes.length === 0)
      throw new SchedulerInputError('config.classes', 'must be a non-empty list, highest priority first');
    const pre = new Set(config.preemptibleClasses ?? []);
    for (const p of pre) if (!config.classes.includes(p)) throw new SchedulerInputError('config.preemptibleClasses', `unknown class ${JSON.stringify(p)}`);
    this.classes = config.classes.map((name, i) => {
      checkKey(`config.classes[${i}]`, name);
      if (this.classIndex.has(name)) throw new SchedulerInputError(`config.classes[${i}]`, `duplicate class ${JSON.stringify(name)}`);
      this.classIndex.set(name, i);
      return new ClassQueue(name, pre.has(name));
    });
    this.maxQueued = positiveInt('config.maxQueued', config.maxQueued);
    this.maxQueuedPerClient = positiveInt('config.maxQueuedPerClient', config.maxQueuedPerClient ?? this.maxQueued);
    this.retryBudget = positiveInt('config.retryBudget', config.retryBudget ?? 2, { allowZero: true });
    this.maxGroupSize = positiveInt('config.maxGroupSize', config.maxGroupSize ?? Math.max(1, this.capacity));
    const alpha = config.ewmaAlpha ?? 0.2;
    if (typeof alpha !== 'number' || !(alpha > 0 && alpha <= 1)) throw new SchedulerInputError('config.ewmaAlpha', `must be in (0, 1] (got ${String(alpha)})`);
    this.alpha = alpha;
    this.defaultWeight = checkWeight('config.defaultWeight', config.defaultWeight ?? 1);
    const grace = config.preemptGraceMs ?? 0;
    if (typeof grace !== 'number' || !Number.isFinite(grace) || grace < 0)
      throw new SchedulerInputError('config.preemptGraceMs', `must be a finite number >= 0 (got ${String(grace)})`);
    this.grace = grace;
    for (const [client, w] of Object.entries(config.weights ?? {})) this.weights.set(client, checkWeight(`config.weights[${JSON.stringify(client)}]`, w));
  }

  /** Sets a client's weight for requests it submits from now on (queued ones keep their tags). */
  setWeight(client: string, weight: number): void {
    checkKey('client', client);
    const w = checkWeight('weight', weight);
    this.weights.set(client, w);
    for (let c = 0; c < this.classes.length; c++) {
      const lane = this.lanes.get(`${c}\u0000${client}`);
      if (lane) lane.weight = w;
    }
  }

  /**
   * Changes the capacity (pool resized). Holders above a lower capacity keep their sandboxes; nothing
   * is admitted until enough are released. A queued group that can no longer fit expires (too_large).
   */
  setCapacity(capacity: number): void {
    this.capacity = positiveInt('capacity', capacity, { allowZero: true });
  }

  /** Queues a request. Throws typed errors on malformed input (state unchanged); a full queue is a result. */
  submit(req: SubmitRequest, now: number): SubmitResult {
    if (typeof req !== 'object' || req === null) throw new SchedulerInputError('request', 'must be an object');
    const id = checkKey('id', req.id);
    const client = checkKey('client', req.client);
    const cls = this.classIndex.get(req.cls);
    if (cls === undefined)
      throw new SchedulerInputError('cls', `unknown class ${JSON.stringify(req.cls)} (configured: ${[...this.classIndex.keys()].join(', ')})`);
    if (typeof req.deadline !== 'number' || Number.isNaN(req.deadline) || req.deadline === Number.NEGATIVE_INFINITY) {
      throw new SchedulerInputError('deadline', `must be a number or Infinity (got ${String(req.deadline)})`);
    }
    checkNow(now);
    const units = positiveInt('units', req.units ?? 1);
    const limit = this.groupLimit();
    if (units > limit) throw new GroupTooLargeError(units, limit);
    if (req.preemptible !== undefined && typeof req.preemptible !== 'boolean') throw new SchedulerInputError('preemptible', 'must be a boolean');
    if (this.entries.has(id)) throw new DuplicateRequestError(id);

    if (req.deadline <= now) return { ok: false, reason: 'deadline_passed' };
    if (this.queued >= this.maxQueued) return { ok: false, reason: 'queue_full', limit: this.maxQueued };
    const mine = this.queuedPerClient.get(client) ?? 0;
    if (mine >= this.maxQueuedPerClient) return { ok: false, reason: 'client_queue_full', limit: this.maxQueuedPerClient };

    const cq = this.classes[cls] as ClassQueue;
    if (this.lanes.size >= this.sweepAt) this.sweepLanes();
    const lane = this.lane(client, cls);
    const start = Math.max(cq.v, lane.finish);
    lane.finish = start + units / lane.weight;
    const e = new Entry(id, lane, units, req.deadline, req.preemptible === true || cq.preemptible, start, this.seq++, now);
    this.entries.set(id, e);
    this.enqueue(e, false);
    return { ok: true };
  }

  /**
   * Expires what is overdue, then admits what fits in order, then (when the head does not fit) asks
   * for preemptions. Call it after every event (submit, release, failure) and when the earliest
   * deadline (nextDeadline()) comes.
   */
  schedule(now: number): Decision[] {
    checkNow(now);
    const out: Decision[] = [];
    this.wakeAt = Number.POSITIVE_INFINITY;
    this.expire(now, out);
    for (;;) {
      const cq = this.topClass();
      if (!cq) break;
      const lane = cq.lanes.peek() as Lane;
      const e = lane.items[lane.head] as Entry;
      if (this.capacity > 0 && e.units > this.groupLimit()) {
        // Only after setCapacity cut below it: it could wait forever, so it leaves now. (Capacity 0
        // is a pause, e.g. a pool not up yet: everything waits for its deadline.)
        this.dequeue(e);
        this.entries.delete(e.id);
        e.state = GONE;
        out.push({ kind: 'expire', id: e.id, reason: 'too_large', waited_ms: now - e.submittedAt });
        continue;
      }
      if (e.units > this.capacity - this.held) {
        this.preemptFor(e, now, out);
        break; // the head is a reservation: nothing behind it overtakes it
      }
      this.admit(e, cq, now, out);
    }
    return out;
  }

  /**
   * When schedule() next has something to do that no event will trigger: the earliest deadline of a
   * queued request, or the end of a waiter's preemption grace; null when nothing is pending.
   */
  nextDeadline(): number | null {
    const e = this.deadlines.peek();
    const t = Math.min(e ? e.deadline : Number.POSITIVE_INFINITY, this.wakeAt);
    return Number.isFinite(t) ? t : null;
  }

  /** The request finished (episode over, session closed, or a preempted holder gave its sandboxes back). */
  release(id: string, now: number): void {
    checkNow(now);
    const e = this.admitted(id);
    this.free(e, e.outstanding, now);
    this.finish(e);
  }

  /** One member of an admitted group finished; true when it was the last (the group completes as one). */
  releaseMember(id: string, now: number): boolean {
    checkNow(now);
    const e = this.admitted(id);
    this.free(e, 1, now);
    if (e.outstanding > 0) return false;
    this.finish(e);
    return true;
  }

  /** Removes a request in any live state (client gone). An admitted one is released without feeding the EWMA. */
  cancel(id: string): void {
    const e = this.entries.get(id);
    if (!e) throw new UnknownRequestError(String(id), 'queued or admitted');
    if (e.state === QUEUED) {
      this.dequeue(e);
      this.entries.delete(id);
      e.state = GONE;
      return;
    }
    this.dropHold(e);
    this.finish(e);
  }

  /**
   * Creating an admitted request's sandbox failed (infrastructure: PROTOCOL.md §11a SANDBOX_ERROR).
   * A single request goes back to its original place in the queue; a group keeps its units and
   * recreates that member (`member`: 0..units-1, each member has its own budget, so a big group is not
   * lost to failures spread over its members); both within the retry budget and before the deadline.
   */
  creationFailed(id: string, now: number, member?: number): FailureOutcome {
    checkNow(now);
    const e = this.admitted(id);
    if (e.units > 1 && (typeof member !== 'number' || !Number.isSafeInteger(member) || member < 0 || member >= e.units)) {
      throw new SchedulerInputError('member', `a group's failed member must be an integer in [0, ${e.units}) (got ${String(member)})`);
    }
    let tries = e.retries;
    if (e.units > 1) {
      e.memberRetries ??= new Array<number>(e.units).fill(0);
      tries = e.memberRetries[member as number] as number;
    }
    const budget = tries < this.retryBudget;
    if (now >= e.deadline || !budget || e.reclaiming) {
      const reason = budget ? 'deadline' : 'retries_exhausted';
      if (e.units > 1) {
        // Only this member gives up: dropping the whole hold would free units the other members' sandboxes
        // still occupy, and their closes would then find no group to complete.
        this.free(e, 1, now, false);
        if (e.outstanding > 0) return { action: 'give_up', reason, last: false };
      } else this.dropHold(e);
      this.finish(e);
      return { action: 'give_up', reason, last: true };
    }
    if (e.memberRetries) {
      e.memberRetries[member as number] = tries + 1;
      return { action: 'recreate', attempt: tries + 1 };
    }
    e.retries += 1;
    this.dropHold(e);
    e.state = QUEUED;
    // Its lane may have been dropped while it was admitted (idle, tag spent): requeue in the live one.
    e.lane = this.lane(e.lane.client, e.lane.cls);
    this.enqueue(e, true);
    return { action: 'requeued', attempt: e.retries };
  }

  /** Where a request stands, for progress events. O(requests ahead in its class + lanes of its class). */
  progress(id: string): Progress {
    const e = this.entries.get(id);
    if (!e) throw new UnknownRequestError(String(id), 'queued or admitted');
    if (e.state === ADMITTED) return { state: 'admitted', position: 0, units_ahead: 0, estimated_wait_ms: 0 };
    let position = 0;
    let unitsAhead = 0;
    for (let c = 0; c < e.lane.cls; c++) {
      const cq = this.classes[c] as ClassQueue;
      position += cq.queued;
      unitsAhead += cq.queuedUnits;
    }
    for (const lane of (this.classes[e.lane.cls] as ClassQueue).lanes.items()) {
      for (let i = lane.head; i < lane.items.length; i++) {
        const x = lane.items[i] as Entry;
        if (!entryBefore(x, e)) break;
        if (x.state !== QUEUED) continue;
        position += 1;
        unitsAhead += x.units;
      }
    }
    const need = unitsAhead + e.units - (this.capacity - this.held);
    let est: number | null;
    if (need <= 0) est = 0;
    else if (this.ewma === null || this.capacity === 0) est = null;
    else est = (need * this.ewma) / this.capacity;
    return { state: 'queued', position, units_ahead: unitsAhead, estimated_wait_ms: est };
  }

  /**
   * Progress of every queued request in one pass, in the order they would be considered (the same
   * figures as progress(id) for each): O(n log lanes) for n queued, where calling progress() for each
   * would be O(n²). For the wiring's periodic `queued` events. Admitted requests are not visited.
   */
  progressAll(visit: (id: string, p: Progress) => void): void {
    let position = 0;
    let unitsAhead = 0;
    const free = this.capacity - this.held;
    const ewma = this.ewma;
    for (const cq of this.classes) {
      const cursors = new IndexedHeap<{ lane: Lane; i: number; pos: number }>(
        (a, b) => entryBefore(a.lane.items[a.i] as Entry, b.lane.items[b.i] as Entry),
        (c) => c.pos,
        (c, i) => {
          c.pos = i;
        },
      );
      for (const lane of cq.lanes.items()) cursors.push({ lane, i: lane.head, pos: -1 });
      for (let c = cursors.peek(); c; c = cursors.peek()) {
        const e = c.lane.items[c.i] as Entry;
        if (e.state === QUEUED) {
          const need = unitsAhead + e.units - free;
          const est = need <= 0 ? 0 : ewma === null || this.capacity === 0 ? null : (need * ewma) / this.capacity;
          visit(e.id, { state: 'queued', position, units_ahead: unitsAhead, estimated_wait_ms: est });
          position += 1;
          unitsAhead += e.units;
        }
        c.i += 1;
        if (c.i < c.lane.items.length) cursors.update(c);
        else cursors.pop();
      }
    }
  }

  stats(): SchedulerStats {
    const byClass: Record<string, number> = {};
    for (const cq of this.classes) byClass[cq.name] = cq.queued;
    return {
      capacity: this.capacity,
      held: this.held,
      reclaiming: this.reclaimingUnits,
      queued: this.queued,
      queued_by_class: byClass,
      ewma_service_ms: this.ewma,
      lanes: this.lanes.size,
    };
  }

  // ---- internals ----

  /** The largest request that could ever be admitted: capacity 0 (paused) does not shrink it. */
  private groupLimit(): number {
    return this.capacity > 0 ? Math.min(this.maxGroupSize, this.capacity) : this.maxGroupSize;
  }

  private lane(client: string, cls: number): Lane {
    const key = `${cls}\u0000${client}`;
    let lane = this.lanes.get(key);
    if (!lane) {
      lane = new Lane(client, cls, key, this.weights.get(client) ?? this.defaultWeight);
      this.lanes.set(key, lane);
    }
    return lane;
  }

  /**
   * Drops every idle lane, and puts the next sweep at twice what is left, so sweeping is amortised O(1)
   * per submit and one-shot clients (connection groups) cannot pile lanes up. An idle lane's finish tag
   * exceeds v by at most its last request's units / weight (all its requests were admitted, so v
   * reached their start tags): a client whose lane was swept gains at most that much on its return,
   * once per sweep. A lane whose tag is spent (finish <= v) is dropped at once when it empties.
   */
  private sweepLanes(): void {
    for (const [key, lane] of this.lanes) if (lane.live === 0) this.lanes.delete(key);
    this.sweepAt = Math.max(1024, 2 * this.lanes.size);
  }

  private topClass(): ClassQueue | undefined {
    for (const cq of this.classes) if (cq.lanes.size > 0) return cq;
    return undefined;
  }

  /** Puts a queued entry into its lane (appended, or at its tag's place for a retry) and the deadline heap. */
  private enqueue(e: Entry, atTag: boolean): void {
    const lane = e.lane;
    const cq = this.classes[lane.cls] as ClassQueue;
    if (atTag) {
      // Binary search over the lane's live window: the first item after e.
      let lo = lane.head;
      let hi = lane.items.length;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (entryBefore(lane.items[mid] as Entry, e)) lo = mid + 1;
        else hi = mid;
      }
      if (lo === lane.head && lane.head > 0) lane.items[--lane.head] = e;
      else lane.items.splice(lo, 0, e);
    } else {
      lane.items.push(e);
    }
    lane.live += 1;
    if (lane.hpos < 0) cq.lanes.push(lane);
    else cq.lanes.update(lane);
    this.deadlines.push(e);
    cq.queued += 1;
    cq.queuedUnits += e.units;
    this.queued += 1;
    this.queuedPerClient.set(lane.client, (this.queuedPerClient.get(lane.client) ?? 0) + 1);
  }

  /** Takes a queued entry out of its lane and the deadline heap (lazily when it is not the lane head). */
  private dequeue(e: Entry): void {
    const lane = e.lane;
    const cq = this.classes[lane.cls] as ClassQueue;
    e.state = GONE; // callers set the final state; GONE marks it dead for the lane meanwhile
    lane.live -= 1;
    this.deadlines.remove(e);
    cq.queued -= 1;
    cq.queuedUnits -= e.units;
    this.queued -= 1;
    const mine = (this.queuedPerClient.get(lane.client) ?? 1) - 1;
    if (mine === 0) this.queuedPerClient.delete(lane.client);
    else this.queuedPerClient.set(lane.client, mine);
    while (lane.head < lane.items.length && (lane.items[lane.head] as Entry).state !== QUEUED) lane.head += 1;
    if (lane.live === 0) {
      lane.items.length = 0;
      lane.head = 0;
      cq.lanes.remove(lane);
      // An idle lane whose finish tag no longer matters (max(v, finish) = v) can go.
      if (lane.finish <= cq.v) this.lanes.delete(lane.key);
      return;
    }
    if (lane.head > 1024 && lane.head * 2 > lane.items.length) {
      lane.items.splice(0, lane.head);
      lane.head = 0;
    }
    cq.lanes.update(lane);
  }

  private admit(e: Entry, cq: ClassQueue, now: number, out: Decision[]): void {
    this.dequeue(e);
    if (e.start > cq.v) cq.v = e.start;
    e.state = ADMITTED;
    e.admittedAt = now;
    e.outstanding = e.units;
    this.held += e.units;
    if (e.preemptible) this.linkHolder(e, cq);
    out.push({ kind: 'admit', id: e.id, units: e.units, attempt: e.retries, waited_ms: now - e.submittedAt });
  }

  private expire(now: number, out: Decision[]): void {
    for (;;) {
      const e = this.deadlines.peek();
      if (!e || e.deadline > now) return;
      this.dequeue(e);
      this.entries.delete(e.id);
      out.push({ kind: 'expire', id: e.id, reason: 'deadline', waited_ms: now - e.submittedAt });
    }
  }

  /**
   * Reclaims lower-class preemptible holders for `e` when, together with what is free and already
   * being reclaimed, they make it fit: lowest class first, and inside a class the most recently
   * admitted first (it has done the least work). When they cannot make it fit, nobody is preempted:
   * the work would be lost without admitting `e` any sooner than waiting does.
   */
  private preemptFor(e: Entry, now: number, out: Decision[]): void {
    let need = e.units - (this.capacity - this.held) - this.reclaimingUnits;
    if (need <= 0) return;
    let available = 0;
    for (let c = this.classes.length - 1; c > e.lane.cls; c--) available += (this.classes[c] as ClassQueue).preemptibleUnits;
    if (available < need) return;
    if (now - e.submittedAt < this.grace) {
      this.wakeAt = e.submittedAt + this.grace; // look again when the grace ends, unless an event comes first
      return;
    }
    for (let c = this.classes.length - 1; c > e.lane.cls && need > 0; c--) {
      const cq = this.classes[c] as ClassQueue;
      while (need > 0 && cq.holdersTail) {
        const v = cq.holdersTail;
        this.unlinkHolder(v);
        v.reclaiming = true;
        this.reclaimingUnits += v.outstanding;
        need -= v.outstanding;
        out.push({ kind: 'preempt', id: v.id, for: e.id });
      }
    }
  }

  private admitted(id: string): Entry {
    const e = this.entries.get(id);
    if (!e || e.state !== ADMITTED) throw new UnknownRequestError(String(id), 'admitted');
    return e;
  }

  /** Gives back `units` of e's hold; `served`: they completed a service (a sample for the wait estimate). */
  private free(e: Entry, units: number, now: number, served = true): void {
    e.outstanding -= units;
    this.held -= units;
    if (e.reclaiming) {
      this.reclaimingUnits -= units;
      return; // a preempted hold is no completed service: it would bias the estimate
    }
    if (e.inHolders) (this.classes[e.lane.cls] as ClassQueue).preemptibleUnits -= units;
    if (!served) return; // a creation that gave up served nothing
    const s = now - e.admittedAt;
    if (Number.isFinite(s) && s >= 0) this.ewma = this.ewma === null ? s : this.alpha * s + (1 - this.alpha) * this.ewma;
  }

  /** Gives back every unit e still holds, without a service-time sample (no completed service). */
  private dropHold(e: Entry): void {
    this.unlinkHolder(e);
    this.held -= e.outstanding;
    if (e.reclaiming) this.reclaimingUnits -= e.outstanding;
    e.outstanding = 0;
  }

  private finish(e: Entry): void {
    this.unlinkHolder(e);
    e.state = GONE;
    this.entries.delete(e.id);
  }

  private linkHolder(e: Entry, cq: ClassQueue): void {
    e.prev = cq.holdersTail;
    e.next = null;
    if (cq.holdersTail) cq.holdersTail.next = e;
    else cq.holdersHead = e;
    cq.holdersTail = e;
    e.inHolders = true;
    cq.preemptibleUnits += e.outstanding;
  }

  private unlinkHolder(e: Entry): void {
    if (!e.inHolders) return;
    const cq = this.classes[e.lane.cls] as ClassQueue;
    if (e.prev) e.prev.next = e.next;
    else cq.holdersHead = e.next;
    if (e.next) e.next.prev = e.prev;
    else cq.holdersTail = e.prev;
    e.prev = e.next = null;
    e.inHolders = false;
    cq.preemptibleUnits -= e.outstanding;
  }
}
