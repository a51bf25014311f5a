// The scheduler core (server/src/scheduler, docs/SCHEDULING.md) driven by explicit events and times:
// no wall clock, no timers, every figure exact or within a stated tolerance over many decisions.
import { describe, expect, it } from 'vitest';
import {
  type Decision,
  DuplicateRequestError,
  GroupTooLargeError,
  Scheduler,
  type SchedulerConfig,
  SchedulerInputError,
  UnknownRequestError,
} from '../../src/admission/scheduler/index.js';

const CLASSES = ['eval', 'train-batch-closing', 'train', 'background'];
const make = (over: Partial<SchedulerConfig> = {}) => new Scheduler({ capacity: 2, classes: CLASSES, maxQueued: 1000, ...over });
const ids = (ds: Decision[], kind: Decision['kind'] = 'admit') => ds.filter((d) => d.kind === kind).map((d) => d.id);
const sub = (s: Scheduler, id: string, client: string, cls: string, now = 0, extra: { deadline?: number; units?: number; preemptible?: boolean } = {}) =>
  s.submit({ id, client, cls, deadline: extra.deadline ?? Number.POSITIVE_INFINITY, units: extra.units, preemptible: extra.preemptible }, now);

describe('priority classes', () => {
  it('admits strictly by class, whatever the submission order', () => {
    const s = make({ capacity: 0 });
    sub(s, 'bg', 'a', 'background');
    sub(s, 'tr', 'a', 'train');
    sub(s, 'cl', 'b', 'train-batch-closing');
    sub(s, 'ev', 'c', 'eval');
    expect(s.schedule(0)).toEqual([]);
    s.setCapacity(4);
    expect(ids(s.schedule(1))).toEqual(['ev', 'cl', 'tr', 'bg']);
  });

  it('admits a later high-class request before an earlier low-class one once capacity frees', () => {
    const s = make({ capacity: 1 });
    sub(s, 'run', 'a', 'train');
    expect(ids(s.schedule(0))).toEqual(['run']);
    sub(s, 'tr2', 'a', 'train', 1);
    sub(s, 'ev', 'b', 'eval', 2);
    expect(s.schedule(2)).toEqual([]);
    s.release('run', 10);
    expect(ids(s.schedule(10))).toEqual(['ev']);
  });
});

describe('weighted fair share inside a class', () => {
  it('gives two backlogged clients with weights 1:3 a 1:3 share over many decisions', () => {
    const s = make({ capacity: 1, maxQueued: 10_000, weights: { light: 1, heavy: 3 } });
    for (let i = 0; i < 4000; i++) {
      sub(s, `l${i}`, 'light', 'train');
      sub(s, `h${i}`, 'heavy', 'train');
    }
    const count = { light: 0, heavy: 0 };
    let running = '';
    for (let t = 0; t < 4000; t++) {
      if (running) s.release(running, t);
      const [d] = s.schedule(t);
      running = d?.id ?? '';
      if (running.startsWith('l')) count.light++;
      else if (running.startsWith('h')) count.heavy++;
      // SFQ's bound: at every point each backlogged client is within a request or two of its share.
      expect(Math.abs(count.heavy - 3 * count.light)).toBeLessThanOrEqual(4);
    }
    expect(count.light + count.heavy).toBe(4000);
    expect(Math.abs(count.heavy / 4000 - 0.75)).toBeLessThan(0.002);
  });

  it('keeps FIFO within one client and lets a newly arriving client start at the current virtual time', () => {
    const s = make({ capacity: 1 });
    for (let i = 0; i < 10; i++) sub(s, `a${i}`, 'a', 'train');
    const order: string[] = [];
    let running = '';
    for (let t = 0; t < 6; t++) {
      if (running) s.release(running, t);
      running = ids(s.schedule(t))[0] ?? '';
      order.push(running);
    }
    // b arrives after a has used five slots: no credit for its absence, alternating from now on.
    sub(s, 'b0', 'b', 'train', 6);
    sub(s, 'b1', 'b', 'train', 6);
    for (let t = 6; t < 10; t++) {
      s.release(running, t);
      running = ids(s.schedule(t))[0] ?? '';
      order.push(running);
    }
    expect(order.slice(0, 6)).toEqual(['a0', 'a1', 'a2', 'a3', 'a4', 'a5']);
    expect(order.slice(6).sort()).toEqual(['a6', 'a7', 'b0', 'b1']);
    expect(order.indexOf('b0')).toBeLessThan(order.indexOf('b1'));
  });
});

describe('deadlines and the queue cap', () => {
  it('expires a queued request at its deadline with CAPACITY semantics and never admits it', () => {
    const s = make({ capacity: 1 });
    sub(s, 'hold', 'a', 'train');
    s.schedule(0);
    sub(s, 'late', 'b', 'train', 0, { deadline: 100 });
    expect(s.nextDeadline()).toBe(100);
    expect(s.schedule(99)).toEqual([]);
    expect(s.schedule(100)).toEqual([{ kind: 'expire', id: 'late', reason: 'deadline', waited_ms: 100 }]);
    s.release('hold', 150);
    expect(s.schedule(150)).toEqual([]);
    expect(() => s.progress('late')).toThrow(UnknownRequestError);
    expect(s.nextDeadline()).toBeNull();
  });

  it('answers queue_full at once beyond the cap, per server and per client, and a past deadline at submit', () => {
    const s = make({ capacity: 0, maxQueued: 3, maxQueuedPerClient: 2 });
    expect(sub(s, 'a1', 'a', 'train')).toEqual({ ok: true });
    expect(sub(s, 'a2', 'a', 'train')).toEqual({ ok: true });
    expect(sub(s, 'a3', 'a', 'train')).toEqual({ ok: false, reason: 'client_queue_full', limit: 2 });
    expect(sub(s, 'b1', 'b', 'train')).toEqual({ ok: true });
    expect(sub(s, 'c1', 'c', 'eval')).toEqual({ ok: false, reason: 'queue_full', limit: 3 });
    expect(sub(s, 'd1', 'd', 'eval', 50, { deadline: 50 })).toEqual({ ok: false, reason: 'deadline_passed' });
    expect(s.stats().queued).toBe(3);
    // A refused id was never entered: it can be submitted again once there is room.
    s.cancel('a1');
    expect(sub(s, 'a3', 'a', 'train')).toEqual({ ok: true });
  });
});

describe('preemption', () => {
  it('reclaims the most recently admitted holder of the lowest class, and only what the waiter needs', () => {
    const s = make({ capacity: 3, preemptibleClasses: ['background'] });
    sub(s, 'bg-old', 'z', 'background', 0);
    s.schedule(0);
    sub(s, 'tr', 'a', 'train', 1, { preemptible: true });
    s.schedule(1);
    sub(s, 'bg-new', 'z', 'background', 2);
    s.schedule(2);
    sub(s, 'ev', 'e', 'eval', 3);
    expect(s.schedule(3)).toEqual([{ kind: 'preempt', id: 'bg-new', for: 'ev' }]);
    // Asked again before the reclaim completes: no second victim.
    expect(s.schedule(4)).toEqual([]);
    expect(s.stats().reclaiming).toBe(1);
    s.release('bg-new', 5);
    expect(ids(s.schedule(5))).toEqual(['ev']);
    expect(s.stats()).toMatchObject({ held: 3, reclaiming: 0 });
  });

  it('waits out the preemption grace first: a holder that finishes meanwhile spares the preemption', () => {
    const s = make({ capacity: 2, preemptibleClasses: ['background'], preemptGraceMs: 50 });
    sub(s, 'bg1', 'z', 'background', 0);
    sub(s, 'bg2', 'z', 'background', 0);
    s.schedule(0);
    sub(s, 'ev1', 'e', 'eval', 10);
    expect(s.schedule(10)).toEqual([]);
    expect(s.nextDeadline()).toBe(60); // the end of ev1's grace: the wiring's one timer
    s.release('bg1', 30);
    expect(ids(s.schedule(30))).toEqual(['ev1']);
    expect(s.nextDeadline()).toBeNull();
    sub(s, 'ev2', 'e', 'eval', 40);
    expect(s.schedule(40)).toEqual([]);
    expect(s.schedule(89)).toEqual([]);
    expect(s.schedule(90)).toEqual([{ kind: 'preempt', id: 'bg2', for: 'ev2' }]);
    expect(() => make({ preemptGraceMs: -1 })).toThrow(SchedulerInputError);
    expect(() => make({ preemptGraceMs: Number.NaN })).toThrow(SchedulerInputError);
  });

  it('never preempts for a same- or lower-class waiter, nor when the victims would not make it fit', () => {
    const s = make({ capacity: 2 });
    sub(s, 'bg', 'z', 'background', 0, { preemptible: true });
    sub(s, 'tr', 'a', 'train', 0);
    s.schedule(0);
    sub(s, 'bg2', 'y', 'background', 1);
    expect(s.schedule(1)).toEqual([]);
    // A group of 2 in eval: only 1 preemptible unit exists, so preempting it would lose work for nothing.
    sub(s, 'grp', 'e', 'eval', 2, { units: 2 });
    expect(s.schedule(2)).toEqual([]);
    s.release('tr', 3);
    // Now free 1 + preemptible 1 = 2: the background holder is reclaimed for the group.
    expect(s.schedule(3)).toEqual([{ kind: 'preempt', id: 'bg', for: 'grp' }]);
    s.release('bg', 4);
    expect(ids(s.schedule(4))).toEqual(['grp']);
  });
});

describe('retries of creation failures', () => {
  it('requeues a failed creation at its original place, ahead of later requests of every client', () => {
    const s = make({ capacity: 1, retryBudget: 2 });
    sub(s, 'a0', 'a', 'train', 0);
    sub(s, 'b0', 'b', 'train', 0);
    sub(s, 'a1', 'a', 'train', 0);
    expect(ids(s.schedule(0))).toEqual(['a0']);
    expect(s.creationFailed('a0', 1)).toEqual({ action: 'requeued', attempt: 1 });
    const [d] = s.schedule(1);
    expect(d).toEqual({ kind: 'admit', id: 'a0', units: 1, attempt: 1, waited_ms: 1 });
    expect(s.creationFailed('a0', 2)).toEqual({ action: 'requeued', attempt: 2 });
    expect(ids(s.schedule(2))).toEqual(['a0']);
    // The budget (2 retries) is spent: the third failure gives up and frees the unit.
    expect(s.creationFailed('a0', 3)).toEqual({ action: 'give_up', reason: 'retries_exhausted', last: true });
    expect(ids(s.schedule(3))).toEqual(['b0']);
  });

  it('gives up once the deadline has passed, even with budget left', () => {
    const s = make({ capacity: 1, retryBudget: 5 });
    sub(s, 'x', 'a', 'train', 0, { deadline: 10 });
    s.schedule(0);
    expect(s.creationFailed('x', 10)).toEqual({ action: 'give_up', reason: 'deadline', last: true });
    expect(s.stats()).toMatchObject({ held: 0, queued: 0 });
  });

  it('a requeued request still expires at its deadline while waiting again', () => {
    const s = make({ capacity: 1 });
    sub(s, 'x', 'a', 'train', 0, { deadline: 10 });
    s.schedule(0);
    sub(s, 'ev', 'e', 'eval', 1);
    expect(s.creationFailed('x', 1)).toEqual({ action: 'requeued', attempt: 1 });
    expect(ids(s.schedule(1))).toEqual(['ev']);
    expect(s.schedule(10)).toEqual([{ kind: 'expire', id: 'x', reason: 'deadline', waited_ms: 10 }]);
  });
});

describe('group admission', () => {
  it('admits a group all or nothing, reserves ahead of smaller later requests, completes as one', () => {
    const s = make({ capacity: 4 });
    for (const id of ['s1', 's2', 's3']) sub(s, id, 'a', 'train', 0);
    s.schedule(0);
    sub(s, 'g', 'b', 'train', 1, { units: 4 });
    for (let i = 0; i < 5; i++) sub(s, `late${i}`, 'c', 'train', 2);
    // One unit is free but the group (head of the class) needs four: nobody overtakes it.
    expect(s.schedule(2)).toEqual([]);
    expect(s.stats().held).toBe(3);
    s.release('s1', 3);
    s.release('s2', 4);
    expect(s.schedule(4)).toEqual([]);
    s.release('s3', 5);
    expect(s.schedule(5)).toEqual([{ kind: 'admit', id: 'g', units: 4, attempt: 0, waited_ms: 4 }]);
    expect(s.releaseMember('g', 6)).toBe(false);
    expect(s.releaseMember('g', 6)).toBe(false);
    expect(s.releaseMember('g', 7)).toBe(false);
    expect(ids(s.schedule(7))).toEqual(['late0', 'late1', 'late2']);
    expect(s.releaseMember('g', 8)).toBe(true);
    expect(() => s.releaseMember('g', 9)).toThrow(UnknownRequestError);
  });

  it('recreates a failed member in place (the group keeps its units), with a budget per member; a member that spends it gives back only its own unit', () => {
    const s = make({ capacity: 3, retryBudget: 1 });
    sub(s, 'g', 'a', 'train', 0, { units: 3 });
    s.schedule(0);
    expect(() => s.creationFailed('g', 1)).toThrow(SchedulerInputError); // which member?
    expect(() => s.creationFailed('g', 1, 3)).toThrow(SchedulerInputError);
    expect(s.creationFailed('g', 1, 0)).toEqual({ action: 'recreate', attempt: 1 });
    expect(s.creationFailed('g', 1, 1)).toEqual({ action: 'recreate', attempt: 1 });
    expect(s.creationFailed('g', 1, 2)).toEqual({ action: 'recreate', attempt: 1 });
    expect(s.stats().held).toBe(3);
    expect(s.creationFailed('g', 2, 1)).toEqual({ action: 'give_up', reason: 'retries_exhausted', last: false });
    // The other two members still hold their sandboxes: their units stay held, and their closes complete the group.
    expect(s.stats().held).toBe(2);
    sub(s, 'single', 'b', 'train', 2);
    expect(ids(s.schedule(2))).toEqual(['single']); // the one unit given back is really free
    expect(s.releaseMember('g', 3)).toBe(false);
    expect(s.releaseMember('g', 4)).toBe(true);
    s.release('single', 5);
    expect(s.stats().held).toBe(0);
  });

  it("a group member that gives up last completes the group (last: true); a single request's give-up is always last", () => {
    const s = make({ capacity: 2, retryBudget: 0 });
    sub(s, 'g', 'a', 'train', 0, { units: 2 });
    s.schedule(0);
    expect(s.releaseMember('g', 1)).toBe(false);
    expect(s.creationFailed('g', 2, 1)).toEqual({ action: 'give_up', reason: 'retries_exhausted', last: true });
    expect(() => s.releaseMember('g', 3)).toThrow(UnknownRequestError);
    expect(s.stats().held).toBe(0);
    sub(s, 'one', 'a', 'train', 3);
    s.schedule(3);
    expect(s.creationFailed('one', 4)).toEqual({ action: 'give_up', reason: 'retries_exhausted', last: true });
    expect(s.stats().held).toBe(0);
  });
});

describe('weights', () => {
  it('applies a changed weight to requests submitted after the change, also in an existing lane', () => {
    const s = make({ capacity: 1, maxQueued: 10_000 });
    sub(s, 'a-first', 'a', 'train'); // a's lane exists (weight 1) before the change
    s.setWeight('a', 3);
    for (let i = 0; i < 400; i++) {
      sub(s, `a${i}`, 'a', 'train');
      sub(s, `b${i}`, 'b', 'train');
    }
    let a = 0;
    let running = '';
    for (let t = 0; t < 400; t++) {
      if (running) s.release(running, t);
      running = ids(s.schedule(t))[0] ?? '';
      if (running.startsWith('a')) a++;
    }
    expect(Math.abs(a / 400 - 0.75)).toBeLessThan(0.01);
  });
});

describe('memory', () => {
  it('does not keep a lane per one-shot client forever', () => {
    const s = make({ capacity: 4, maxQueued: 100 });
    // 20,000 clients (e.g. connection groups) that each come once, in rounds of 4 that overlap.
    for (let i = 0; i < 20_000; i++) {
      sub(s, `r${i}`, `conn:${i}`, 'train', i);
      for (const d of s.schedule(i)) if (d.kind === 'admit' && i >= 3) s.release(`r${i - 3}`, i);
      s.schedule(i);
    }
    expect(s.stats().lanes).toBeLessThanOrEqual(2048);
  });
});

describe('progress', () => {
  it('reports position, units ahead and a wait estimated from the EWMA of completed holds', () => {
    const s = make({ capacity: 2, ewmaAlpha: 0.5 });
    sub(s, 'r1', 'a', 'train', 0);
    sub(s, 'r2', 'a', 'train', 0);
    s.schedule(0);
    sub(s, 'q1', 'a', 'train', 0);
    sub(s, 'q2', 'b', 'train', 0, { units: 2 });
    sub(s, 'e1', 'c', 'eval', 0);
    // No completion observed yet: the wait is unknown, not a guess.
    expect(s.progress('q1')).toEqual({ state: 'queued', position: 2, units_ahead: 3, estimated_wait_ms: null });
    s.release('r1', 100); // hold 100
    s.release('r2', 300); // hold 300: ewma = 0.5*300 + 0.5*100 = 200
    expect(s.stats().ewma_service_ms).toBe(200);
    expect(s.progress('e1')).toEqual({ state: 'queued', position: 0, units_ahead: 0, estimated_wait_ms: 0 });
    // q2's client b had no service yet, so its tag (1) is below q1's (2, after a's r1 and r2): only e1
    // is ahead. It needs 1 + 2 units with 2 free: one unit to come, at capacity 2 and 200 ms per hold.
    expect(s.progress('q2')).toEqual({ state: 'queued', position: 1, units_ahead: 1, estimated_wait_ms: (1 * 200) / 2 });
    s.schedule(300);
    expect(s.progress('e1')).toEqual({ state: 'admitted', position: 0, units_ahead: 0, estimated_wait_ms: 0 });
  });
});

describe('hostile input: typed errors, state unchanged', () => {
  it('refuses malformed config', () => {
    const base = { capacity: 1, classes: ['a'], maxQueued: 1 };
    for (const bad of [
      { ...base, capacity: -1 },
      { ...base, capacity: Number.NaN },
      { ...base, classes: [] },
      { ...base, classes: ['a', 'a'] },
      { ...base, maxQueued: 0 },
      { ...base, ewmaAlpha: 0 },
      { ...base, ewmaAlpha: Number.NaN },
      { ...base, weights: { x: Number.NaN } },
      { ...base, weights: { x: -1 } },
      { ...base, weights: { x: Number.POSITIVE_INFINITY } },
      { ...base, defaultWeight: 0 },
      { ...base, preemptibleClasses: ['nope'] },
      { ...base, retryBudget: 1.5 },
    ]) {
      expect(() => new Scheduler(bad as SchedulerConfig), JSON.stringify(bad)).toThrow(SchedulerInputError);
    }
    expect(() => new Scheduler(null as unknown as SchedulerConfig)).toThrow(SchedulerInputError);
  });

  it('refuses malformed requests, huge groups and duplicate ids, leaving the queue as it was', () => {
    const s = make({ capacity: 8, maxGroupSize: 4 });
    expect(sub(s, 'ok', 'a', 'train')).toEqual({ ok: true });
    const before = s.stats();
    const bad: [unknown, new (...a: never[]) => Error][] = [
      [{ id: '', client: 'a', cls: 'train', deadline: 1 }, SchedulerInputError],
      [{ id: 'x', client: '', cls: 'train', deadline: 1 }, SchedulerInputError],
      [{ id: 'x', client: 'a'.repeat(513), cls: 'train', deadline: 1 }, SchedulerInputError],
      [{ id: 'x', client: 'a', cls: 'root', deadline: 1 }, SchedulerInputError],
      [{ id: 'x', client: 'a', cls: '__proto__', deadline: 1 }, SchedulerInputError],
      [{ id: 'x', client: 'a', cls: 'train', deadline: Number.NaN }, SchedulerInputError],
      [{ id: 'x', client: 'a', cls: 'train', deadline: '5' }, SchedulerInputError],
      [{ id: 'x', client: 'a', cls: 'train', deadline: 1, units: 0 }, SchedulerInputError],
      [{ id: 'x', client: 'a', cls: 'train', deadline: 1, units: -3 }, SchedulerInputError],
      [{ id: 'x', client: 'a', cls: 'train', deadline: 1, units: 2.5 }, SchedulerInputError],
      [{ id: 'x', client: 'a', cls: 'train', deadline: 1, units: Number.NaN }, SchedulerInputError],
      [{ id: 'x', client: 'a', cls: 'train', deadline: 1, units: 5 }, GroupTooLargeError],
      [{ id: 'x', client: 'a', cls: 'train', deadline: 1, units: 1e12 }, GroupTooLargeError],
      [{ id: 'x', client: 'a', cls: 'train', deadline: 1, preemptible: 'yes' }, SchedulerInputError],
      [{ id: 'ok', client: 'b', cls: 'eval', deadline: 1 }, DuplicateRequestError],
      [null, SchedulerInputError],
    ];
    for (const [req, type] of bad) expect(() => s.submit(req as never, 0), JSON.stringify(req)).toThrow(type);
    expect(() => s.submit({ id: 'y', client: 'a', cls: 'train', deadline: 1 }, Number.NaN)).toThrow(SchedulerInputError);
    expect(() => s.setWeight('a', Number.NaN)).toThrow(SchedulerInputError);
    expect(() => s.setWeight('a', -2)).toThrow(SchedulerInputError);
    expect(() => s.setCapacity(-1)).toThrow(SchedulerInputError);
    // A NaN clock would compare false with every deadline and expire the whole queue.
    for (const bad of [Number.NaN, Number.POSITIVE_INFINITY, '5' as unknown as number]) expect(() => s.schedule(bad)).toThrow(SchedulerInputError);
    expect(() => s.release('ok', 0)).toThrow(UnknownRequestError); // queued, not admitted
    expect(() => s.creationFailed('nope', 0)).toThrow(UnknownRequestError);
    expect(() => s.cancel('nope')).toThrow(UnknownRequestError);
    expect(s.stats()).toEqual(before);
    expect(ids(s.schedule(0))).toEqual(['ok']);
  });

  it('expires a queued group that can no longer fit after a capacity cut instead of blocking the queue', () => {
    const s = make({ capacity: 4 });
    sub(s, 'hold', 'a', 'train', 0, { units: 4 });
    s.schedule(0);
    sub(s, 'g', 'b', 'eval', 1, { units: 3 });
    sub(s, 'one', 'c', 'train', 1);
    s.setCapacity(2);
    s.release('hold', 2);
    const ds = s.schedule(2);
    expect(ds).toEqual([
      { kind: 'expire', id: 'g', reason: 'too_large', waited_ms: 1 },
      { kind: 'admit', id: 'one', units: 1, attempt: 0, waited_ms: 1 },
    ]);
  });
});
