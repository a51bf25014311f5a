// Invariants of the scheduler core over random event sequences (fast-check; seeds are reported on
// failure and replayable): never over capacity, the core's held units equal what its decisions say,
// no request both holding and expired (or admitted after it expired), admission never after the
// deadline, FIFO per client inside a class, and no starvation of a low-weight client inside its class.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type Decision, Scheduler } from '../../src/admission/scheduler/index.js';

const CLASSES = ['eval', 'closing', 'train', 'background'];

type Op =
  | { op: 'submit'; client: number; cls: number; units: number; ttl: number; preemptible: boolean }
  | { op: 'tick'; dt: number }
  | { op: 'release'; pick: number }
  | { op: 'member'; pick: number }
  | { op: 'fail'; pick: number }
  | { op: 'cancel'; pick: number };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      op: fc.constant('submit' as const),
      client: fc.nat(3),
      cls: fc.nat(3),
      units: fc.integer({ min: 1, max: 3 }),
      ttl: fc.integer({ min: 1, max: 60 }),
      preemptible: fc.boolean(),
    }),
  },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('tick' as const), dt: fc.integer({ min: 0, max: 10 }) }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('release' as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('member' as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('fail' as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('cancel' as const), pick: fc.nat() }) },
);

interface Model {
  state: 'queued' | 'admitted' | 'expired' | 'done';
  units: number;
  outstanding: number;
  deadline: number;
  lane: string;
  seq: number;
  everAdmitted: boolean;
  preemptible: boolean;
  submittedAt: number;
}

describe('scheduler invariants under random events', () => {
  it('holds every invariant after every event', () => {
    // What the random runs exercised, summed: each path must have been taken, or the invariants say little.
    const seen = { admit: 0, expire: 0, preempt: 0, requeued: 0, recreate: 0, give_up: 0, group_done: 0 };
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 6 }),
        fc.constantFrom(0, 5, 20),
        fc.array(opArb, { minLength: 30, maxLength: 200, size: 'max' }),
        (capacity, grace, ops) => {
          const s = new Scheduler({
            capacity,
            classes: CLASSES,
            maxQueued: 40,
            maxQueuedPerClient: 25,
            retryBudget: 1,
            weights: { c0: 1, c1: 3, c2: 0.5 },
            preemptibleClasses: ['background'],
            preemptGraceMs: grace,
          });
          const m = new Map<string, Model>();
          const firstAdmits = new Map<string, number[]>(); // lane -> submission seqs in first-admission order
          let now = 0;
          let n = 0;
          const live = (st: Model['state']) => [...m].filter(([, r]) => r.state === st).map(([id]) => id);
          const apply = (ds: Decision[]) => {
            for (const d of ds) {
              const r = m.get(d.id);
              expect(r, `decision for unknown id ${d.id}`).toBeDefined();
              if (!r) continue;
              seen[d.kind] += 1;
              if (d.kind === 'admit') {
                expect(r.state).toBe('queued');
                expect(r.deadline).toBeGreaterThan(now);
                r.state = 'admitted';
                r.outstanding = r.units;
                if (!r.everAdmitted) {
                  r.everAdmitted = true;
                  const l = firstAdmits.get(r.lane) ?? [];
                  l.push(r.seq);
                  firstAdmits.set(r.lane, l);
                }
              } else if (d.kind === 'expire') {
                expect(r.state, `expired while ${r.state}`).toBe('queued');
                expect(r.deadline).toBeLessThanOrEqual(now);
                r.state = 'expired';
              } else {
                // A victim holds sandboxes, was preemptible, and ranks strictly below the waiter it is for.
                expect(r.state).toBe('admitted');
                const w = m.get(d.for);
                expect(w?.state).toBe('queued');
                expect(r.preemptible).toBe(true);
                expect(Number(r.lane.split('/')[0])).toBeGreaterThan(Number(w?.lane.split('/')[0]));
                expect(now - (w?.submittedAt ?? now)).toBeGreaterThanOrEqual(grace);
              }
            }
          };
          for (const o of ops) {
            if (o.op === 'submit') {
              const id = `r${n}`;
              const res = s.submit(
                {
                  id,
                  client: `c${o.client}`,
                  cls: CLASSES[o.cls] as string,
                  deadline: now + o.ttl,
                  units: Math.min(o.units, capacity),
                  preemptible: o.preemptible,
                },
                now,
              );
              if (res.ok)
                m.set(id, {
                  state: 'queued',
                  units: Math.min(o.units, capacity),
                  outstanding: 0,
                  deadline: now + o.ttl,
                  lane: `${o.cls}/${o.client}`,
                  seq: n,
                  everAdmitted: false,
                  preemptible: o.preemptible || o.cls === 3,
                  submittedAt: now,
                });
              n++;
            } else if (o.op === 'tick') {
              now += o.dt;
            } else {
              const pool = o.op === 'cancel' ? [...live('queued'), ...live('admitted')] : live('admitted');
              const id = pool[o.pick % Math.max(1, pool.length)];
              const r = id === undefined ? undefined : m.get(id);
              if (id !== undefined && r) {
                if (o.op === 'release') {
                  s.release(id, now);
                  r.state = 'done';
                } else if (o.op === 'member') {
                  const last = s.releaseMember(id, now);
                  r.outstanding -= 1;
                  expect(last).toBe(r.outstanding === 0);
                  if (last) {
                    r.state = 'done';
                    seen.group_done += 1;
                  }
                } else if (o.op === 'cancel') {
                  s.cancel(id);
                  r.state = 'done';
                } else {
                  const f = s.creationFailed(id, now, r.units > 1 ? o.pick % r.units : undefined);
                  seen[f.action] += 1;
                  if (f.action === 'requeued') r.state = 'queued';
                  else if (f.action === 'give_up') {
                    // A group member gives back only its own unit; the request ends with its last one.
                    r.outstanding = r.units > 1 ? r.outstanding - 1 : 0;
                    expect(f.last).toBe(r.outstanding === 0);
                    if (f.last) r.state = 'done';
                  } else expect(r.units).toBeGreaterThan(1);
                }
              }
            }
            apply(s.schedule(now));
            const held = [...m.values()].filter((r) => r.state === 'admitted').reduce((a, r) => a + r.outstanding, 0);
            const st = s.stats();
            expect(st.held).toBe(held);
            expect(st.held).toBeLessThanOrEqual(capacity);
            expect(st.queued).toBe(live('queued').length);
            // The one-pass progress agrees with progress(id) for every queued request, positions 0..n-1.
            const all: number[] = [];
            s.progressAll((id, p) => {
              expect(p).toEqual(s.progress(id));
              all.push(p.position);
            });
            expect(all).toEqual(live('queued').map((_, k) => k));
          }
          for (const seqs of firstAdmits.values()) expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
        },
      ),
      { numRuns: 150 },
    );
    for (const [path, n] of Object.entries(seen)) expect(n, `${path} never happened in 150 random runs`).toBeGreaterThan(0);
  });

  it('never starves a low-weight client inside its class: it is served within ceil(w_high / w_low) + 2 admissions', () => {
    fc.assert(
      fc.property(fc.double({ min: 0.1, max: 1, noNaN: true }), fc.double({ min: 1, max: 100, noNaN: true }), (wLow, wHigh) => {
        const s = new Scheduler({ capacity: 1, classes: ['train'], maxQueued: 100_000, weights: { low: wLow, high: wHigh } });
        const bound = Math.ceil(wHigh / wLow) + 2;
        const total = 3 * bound; // the high client stays backlogged throughout
        for (let i = 0; i < total; i++) s.submit({ id: `h${i}`, client: 'high', cls: 'train', deadline: Number.POSITIVE_INFINITY }, 0);
        for (let i = 0; i < 3; i++) s.submit({ id: `l${i}`, client: 'low', cls: 'train', deadline: Number.POSITIVE_INFINITY }, 0);
        let gap = 0;
        let lowServed = 0;
        let running = '';
        for (let t = 0; t < total + 3 && lowServed < 3; t++) {
          if (running) s.release(running, t);
          running = s.schedule(t)[0]?.id ?? '';
          if (running.startsWith('l')) {
            lowServed++;
            gap = 0;
          } else {
            gap++;
            expect(gap).toBeLessThanOrEqual(bound);
          }
        }
        expect(lowServed).toBe(3);
      }),
      { numRuns: 100 },
    );
  });
});
