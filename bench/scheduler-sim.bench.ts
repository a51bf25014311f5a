// Scheduler simulation (issue #18): `npx tsx bench/scheduler-sim.bench.ts [--seed N] [--episodes N] [--capacity N]`
// (also run by `npm run bench`). The real scheduler core (server/src/scheduler) against simulated
// sandboxes in simulated time: 100,000 episodes over 10,000 sandboxes, five clients in four classes with
// weights, random hold times, 2% creation failures (retried), 16-episode groups, preemptible background
// work. The baseline, measured in the same run on the same workload (same arrivals, same hold time and
// failure per episode and attempt), is a plain FIFO queue: what a server without the scheduler does.
// Reports the policy's own CPU cost per call and per decision (every call the simulation made is recorded,
// then replayed alone against a fresh policy, 5 times interleaved, median process CPU time: immune to the
// time a loaded machine spends elsewhere), share per client vs weight, waits per class (simulated
// seconds: the sim's time unit is the second, so the core's *_ms fields read as seconds here), what
// expired and what was preempted.
import { IndexedHeap } from '../server/src/admission/scheduler/heap.js';
import { type Decision, type FailureOutcome, Scheduler, type SubmitResult } from '../server/src/admission/scheduler/index.js';
import { percentile, round } from './lib/stats.js';

const arg = (name: string, dflt: number) => (process.argv.includes(name) ? Number(process.argv[process.argv.indexOf(name) + 1]) : dflt);
const SEED = arg('--seed', 1);
const EPISODES = arg('--episodes', 100_000);
const CAPACITY = arg('--capacity', 10_000);
const CREATE_S = 1; // a sandbox from the pool is ready this long after admission
const FAIL_S = 2; // a failed creation is noticed this long after admission
const FAIL_P = 0.02;
const RETRY_BUDGET = 2;
const GROUP = 16;
/** An eval or closing request waits this long for a natural completion before background work is preempted. */
const PREEMPT_GRACE_S = arg('--grace', 5);
const CLASSES = ['eval', 'train-batch-closing', 'train', 'background'];

/** Deterministic uniform [0,1) from (seed, a, b): each episode/attempt gets its own draw whatever the order. */
function u(a: number, b: number): number {
  let h = (SEED * 0x9e3779b1) ^ Math.imul(a + 1, 0x85ebca6b) ^ Math.imul(b + 7, 0xc2b2ae35);
  h = Math.imul(h ^ (h >>> 16), 0x7feb352d);
  h = Math.imul(h ^ (h >>> 15), 0x846ca68b);
  h ^= h >>> 16;
  return (h >>> 0) / 4294967296;
}

interface Req {
  id: string;
  client: string;
  cls: string;
  units: number;
  arrive: number;
  deadline: number;
  preemptible: boolean;
  /** First episode index of this request (a group's members are first..first+units-1). */
  first: number;
}

/** The workload: 100,000 episodes by default, sized by EPISODES. */
function workload(): Req[] {
  const n = EPISODES;
  const reqs: Req[] = [];
  let ep = 0;
  const add = (client: string, cls: string, units: number, arrive: number, ttl: number, preemptible = false) => {
    reqs.push({ id: `${client}${reqs.length}`, client, cls, units, arrive, deadline: arrive + ttl, preemptible, first: ep });
    ep += units;
  };
  // Two trainers with weights 1:3 submit 40% each at t=0, interleaved (so FIFO alternates them).
  for (let i = 0; i < 0.4 * n; i++) {
    add('A', 'train', 1, 0, 3600);
    add('B', 'train', 1, 0, 3600);
  }
  // Background work with a 9-minute queue deadline: some of it expires when higher classes take the pool.
  for (let i = 0; i < 0.08 * n; i++) add('Z', 'background', 1, 0, 540, true);
  // Groups that close a training batch, and evaluation, arrive over the first 10 minutes.
  const groups = Math.floor((0.08 * n) / GROUP);
  for (let i = 0; i < groups; i++) add('G', 'train-batch-closing', GROUP, 600 * u(1_000_000 + i, 0), 1200);
  for (let i = 0; i < 0.04 * n; i++) add('E', 'eval', 1, 60 + 540 * u(2_000_000 + i, 0), 600);
  return reqs.sort((a, b) => a.arrive - b.arrive);
}

/** What the simulation needs of a policy: the scheduler core's event methods. */
interface Policy {
  submit(r: { id: string; client: string; cls: string; deadline: number; units: number; preemptible: boolean }, now: number): SubmitResult;
  schedule(now: number): Decision[];
  release(id: string, now: number): void;
  releaseMember(id: string, now: number): boolean;
  creationFailed(id: string, now: number, member?: number): FailureOutcome;
  nextDeadline(): number | null;
}

/** The baseline: one FIFO, head-of-line admission, deadlines checked when a request reaches the head,
 * a failed creation goes to the back (the client retries after SANDBOX_ERROR). */
class Fifo implements Policy {
  private q: { id: string; units: number; deadline: number; at: number; retries: number }[] = [];
  private head = 0;
  private held = 0;
  private readonly live = new Map<string, { units: number; out: number; deadline: number; at: number; retries: number }>();
  private readonly memberRetries = new Map<string, number>();
  constructor(private readonly capacity: number) {}
  submit(r: { id: string; deadline: number; units: number }, now: number): SubmitResult {
    this.q.push({ id: r.id, units: r.units, deadline: r.deadline, at: now, retries: 0 });
    return { ok: true };
  }
  schedule(now: number): Decision[] {
    const out: Decision[] = [];
    while (this.head < this.q.length) {
      const e = this.q[this.head]!;
      if (e.deadline <= now) {
        this.head++;
        out.push({ kind: 'expire', id: e.id, reason: 'deadline', waited_ms: now - e.at });
        continue;
      }
      if (e.units > this.capacity - this.held) break;
      this.head++;
      this.held += e.units;
      this.live.set(e.id, { units: e.units, out: e.units, deadline: e.deadline, at: e.at, retries: e.retries });
      out.push({ kind: 'admit', id: e.id, units: e.units, attempt: e.retries, waited_ms: now - e.at });
    }
    if (this.head > 65536 && this.head * 2 > this.q.length) {
      this.q = this.q.slice(this.head);
      this.head = 0;
    }
    return out;
  }
  release(id: string): void {
    const e = this.live.get(id)!;
    this.held -= e.out;
    this.live.delete(id);
  }
  releaseMember(id: string): boolean {
    const e = this.live.get(id)!;
    e.out -= 1;
    this.held -= 1;
    if (e.out > 0) return false;
    this.live.delete(id);
    return true;
  }
  creationFailed(id: string, now: number, member = 0): FailureOutcome {
    const e = this.live.get(id)!;
    // Same budget rule as the scheduler: per member for a group.
    const key = `${id}/${member}`;
    const tries = e.units > 1 ? (this.memberRetries.get(key) ?? 0) : e.retries;
    if (tries >= RETRY_BUDGET || now >= e.deadline) {
      const reason = tries >= RETRY_BUDGET ? 'retries_exhausted' : 'deadline';
      // A group member gives back only its own unit (as in the scheduler).
      if (e.units > 1) return { action: 'give_up', reason, last: this.releaseMember(id) };
      this.release(id);
      return { action: 'give_up', reason, last: true };
    }
    if (e.units > 1) {
      this.memberRetries.set(key, tries + 1);
      return { action: 'recreate', attempt: tries + 1 };
    }
    e.retries += 1;
    this.release(id);
    this.q.push({ id, units: 1, deadline: e.deadline, at: e.at, retries: e.retries });
    return { action: 'requeued', attempt: e.retries };
  }
  nextDeadline(): null {
    return null;
  }
}

const ARRIVE = 0;
const DONE = 1;
const FAILED = 2;
const START_MEMBER = 3;
const TICK = 4;
interface Ev {
  t: number;
  seq: number;
  kind: number;
  req: number;
  member: number;
  gen: number;
  pos: number;
}

interface Result {
  policy: string;
  calls: number;
  decisions: number;
  /** Median over replays of the recorded calls: process CPU time (user + system), so time the shared
   * machine spent on other processes is not counted. */
  replay_cpu_ms: number;
  cpu_ns_per_call: number;
  cpu_us_per_decision: number;
  sim_wall_ms: number;
  makespan_s: number;
  share: Record<string, number>;
  waits_s: Record<string, { n: number; p50: number; p99: number }>;
  expired: Record<string, number>;
  preempted: number;
  creation_failures: number;
  gave_up: number;
}

const OP_SUBMIT = 0;
const OP_SCHEDULE = 1;
const OP_RELEASE = 2;
const OP_RELEASE_MEMBER = 3;
const OP_FAILED = 4;
const OP_NEXT_DEADLINE = 5;
/** Every call the simulation made on a policy, in order: replayed alone to time the policy itself. */
interface Trace {
  op: number[];
  req: number[];
  now: number[];
  member: number[];
}

function simulate(name: string, policy: Policy, reqs: Req[], trace: Trace): Omit<Result, 'cpu_ns_per_call' | 'cpu_us_per_decision' | 'replay_cpu_ms'> {
  const index = new Map<string, number>();
  reqs.forEach((r, i) => index.set(r.id, i));
  const gen = new Int32Array(reqs.length);
  const attempts = new Int32Array(reqs.length);
  const firstWait = new Float64Array(reqs.length).fill(-1);
  /** Arrived and not yet admitted or expired, per client. */
  const waiting: Record<string, number> = {};
  for (const r of reqs) waiting[r.client] = 0;
  /** Admissions of A and B made while the other one also had requests waiting (both backlogged). */
  const admittedUnits: Record<string, number> = { A: 0, B: 0 };
  const expired: Record<string, number> = {};
  let preempted = 0;
  let failures = 0;
  let gaveUp = 0;
  let seq = 0;
  let decisions = 0;
  const rec = (op: number, i: number, now: number, m = 0) => {
    trace.op.push(op);
    trace.req.push(i);
    trace.now.push(now);
    trace.member.push(m);
  };
  let lastTick = -1;
  let end = 0;
  const evs = new IndexedHeap<Ev>(
    (a, b) => a.t < b.t || (a.t === b.t && a.seq < b.seq),
    (e) => e.pos,
    (e, i) => {
      e.pos = i;
    },
  );
  const push = (t: number, kind: number, req: number, member = 0) => evs.push({ t, seq: seq++, kind, req, member, gen: gen[req]!, pos: -1 });
  for (let i = 0; i < reqs.length; i++) evs.push({ t: reqs[i]!.arrive, seq: seq++, kind: ARRIVE, req: i, member: 0, gen: 0, pos: -1 });

  /** Starts one member's sandbox: it fails (noticed after FAIL_S) or runs its hold time. */
  const start = (now: number, i: number, member: number) => {
    const r = reqs[i]!;
    const attempt = attempts[i]!;
    const ep = r.first + member;
    if (u(ep, 100 + attempt) < FAIL_P) push(now + FAIL_S, FAILED, i, member);
    else push(now + CREATE_S + 20 - 40 * Math.log(1 - u(ep, 0)), DONE, i, member);
  };

  const runSchedule = (now: number) => {
    for (;;) {
      rec(OP_SCHEDULE, 0, now);
      const ds = policy.schedule(now);
      decisions += ds.length;
      let again = false;
      for (const d of ds) {
        const i = index.get(d.id)!;
        const r = reqs[i]!;
        if (d.kind === 'admit') {
          waiting[r.client]! -= 1;
          if ((r.client === 'A' && waiting.B! > 0) || (r.client === 'B' && waiting.A! > 0)) admittedUnits[r.client]! += r.units;
          if (firstWait[i]! < 0) firstWait[i] = now - r.arrive;
          for (let m = 0; m < r.units; m++) start(now, i, m);
        } else if (d.kind === 'expire') {
          waiting[r.client]! -= 1;
          expired[r.cls] = (expired[r.cls] ?? 0) + 1;
        } else {
          // The wiring reclaims the sandbox (PREEMPTED to its client) and gives it back at once.
          preempted++;
          gen[i]! += 1;
          rec(OP_RELEASE, i, now);
          policy.release(d.id, now);
          again = true;
        }
      }
      if (!again) break;
    }
    rec(OP_NEXT_DEADLINE, 0, now);
    const nd = policy.nextDeadline();
    if (nd !== null && nd !== lastTick) {
      lastTick = nd;
      evs.push({ t: nd, seq: seq++, kind: TICK, req: 0, member: 0, gen: 0, pos: -1 });
    }
  };

  const wall0 = performance.now();
  for (let ev = evs.pop(); ev; ev = evs.pop()) {
    const now = ev.t;
    const r = reqs[ev.req]!;
    if (ev.kind !== ARRIVE && ev.kind !== TICK && ev.gen !== gen[ev.req]) continue; // reclaimed meanwhile
    if (ev.kind !== TICK) end = Math.max(end, now);
    let outcome: FailureOutcome | null = null;
    if (ev.kind === ARRIVE) {
      rec(OP_SUBMIT, ev.req, now);
      const res = policy.submit({ id: r.id, client: r.client, cls: r.cls, deadline: r.deadline, units: r.units, preemptible: r.preemptible }, now);
      if (!res.ok) throw new Error(`submit refused: ${res.reason}`);
      waiting[r.client]! += 1;
    } else if (ev.kind === DONE) {
      rec(r.units === 1 ? OP_RELEASE : OP_RELEASE_MEMBER, ev.req, now);
      if (r.units === 1) policy.release(r.id, now);
      else policy.releaseMember(r.id, now);
    } else if (ev.kind === FAILED) {
      rec(OP_FAILED, ev.req, now, ev.member);
      outcome = policy.creationFailed(r.id, now, ev.member);
    }
    if (ev.kind === FAILED && outcome) {
      failures++;
      attempts[ev.req]! += 1;
      if (outcome.action === 'recreate') push(now + 0, START_MEMBER, ev.req, ev.member);
      else if (outcome.action === 'requeued') waiting[r.client]! += 1;
      else {
        gaveUp++;
        // A group member gives up alone: the other members run on and their releases complete the group.
        if (outcome.last) gen[ev.req]! += 1;
      }
    }
    if (ev.kind === START_MEMBER) start(now, ev.req, ev.member);
    runSchedule(now);
  }
  const wall = performance.now() - wall0;

  const waits: Record<string, { n: number; p50: number; p99: number }> = {};
  for (const cls of CLASSES) {
    const w = reqs.map((r, i) => (r.cls === cls ? firstWait[i]! : -1)).filter((x) => x >= 0);
    const sorted = Float64Array.from(w).sort();
    waits[cls] = { n: sorted.length, p50: round(percentile(sorted, 50)), p99: round(percentile(sorted, 99)) };
  }
  const ab = admittedUnits.A! + admittedUnits.B!;
  return {
    policy: name,
    calls: trace.op.length,
    decisions,
    sim_wall_ms: round(wall),
    makespan_s: round(end),
    share: { A_weight_1: round(admittedUnits.A! / ab, 3), B_weight_3: round(admittedUnits.B! / ab, 3), window_admissions: ab },
    waits_s: waits,
    expired,
    preempted,
    creation_failures: failures,
    gave_up: gaveUp,
  };
}

/** Replays a trace against a fresh policy: only the policy's own work (plus one array read per call). */
function replay(make: () => Policy, reqs: Req[], trace: Trace): number {
  const policy = make();
  const subs = reqs.map((r) => ({ id: r.id, client: r.client, cls: r.cls, deadline: r.deadline, units: r.units, preemptible: r.preemptible }));
  const { op, req, now, member } = trace;
  const n = op.length;
  const c0 = process.cpuUsage();
  for (let k = 0; k < n; k++) {
    const t = now[k]!;
    switch (op[k]) {
      case OP_SUBMIT:
        policy.submit(subs[req[k]!]!, t);
        break;
      case OP_SCHEDULE:
        policy.schedule(t);
        break;
      case OP_RELEASE:
        policy.release(subs[req[k]!]!.id, t);
        break;
      case OP_RELEASE_MEMBER:
        policy.releaseMember(subs[req[k]!]!.id, t);
        break;
      case OP_FAILED:
        policy.creationFailed(subs[req[k]!]!.id, t, member[k]);
        break;
      default:
        policy.nextDeadline();
    }
  }
  const c = process.cpuUsage(c0);
  return (c.user + c.system) / 1000;
}

const reqs = workload();
const episodes = reqs.reduce((a, r) => a + r.units, 0);
console.log(
  JSON.stringify({
    bench: 'scheduler-sim',
    seed: SEED,
    episodes,
    requests: reqs.length,
    capacity: CAPACITY,
    fail_p: FAIL_P,
    retry_budget: RETRY_BUDGET,
    group: GROUP,
    preempt_grace_s: PREEMPT_GRACE_S,
    time_unit: 's',
  }),
);
const schedulerWith = (grace: number) => (): Policy =>
  new Scheduler({
    capacity: CAPACITY,
    classes: CLASSES,
    maxQueued: 2 * reqs.length,
    retryBudget: RETRY_BUDGET,
    maxGroupSize: 64,
    weights: { A: 1, B: 3, G: 1, E: 1, Z: 1 },
    preemptibleClasses: ['background'],
    preemptGraceMs: grace,
  });
// The scheduler twice: with the preemption grace, and without (preempt the moment a waiter does not fit).
const factories = { fifo: (): Policy => new Fifo(CAPACITY), scheduler: schedulerWith(PREEMPT_GRACE_S), 'scheduler-no-grace': schedulerWith(0) };
const NAMES = ['fifo', 'scheduler', 'scheduler-no-grace'] as const;
const results: Result[] = [];
const traces: Trace[] = [];
for (const name of NAMES) {
  const trace: Trace = { op: [], req: [], now: [], member: [] };
  const sim = simulate(name, factories[name](), reqs, trace);
  results.push({ ...sim, replay_cpu_ms: 0, cpu_ns_per_call: 0, cpu_us_per_decision: 0 });
  traces.push(trace);
}
// Replays interleaved (fifo, scheduler, fifo, ...) so a noisy neighbour on the shared machine hits both alike.
const REPLAYS = 5;
const cpu: number[][] = NAMES.map(() => []);
for (let k = 0; k < REPLAYS; k++) {
  for (const [j, name] of NAMES.entries()) cpu[j]!.push(replay(factories[name], reqs, traces[j]!));
}
for (const [j, r] of results.entries()) {
  const sorted = [...cpu[j]!].sort((a, b) => a - b);
  const ms = sorted[Math.floor(sorted.length / 2)]!;
  r.replay_cpu_ms = round(ms);
  r.cpu_ns_per_call = round((ms * 1e6) / r.calls, 0);
  r.cpu_us_per_decision = round((ms * 1e3) / r.decisions, 2);
  console.log(JSON.stringify(r));
}
// Progress for every waiter at once (the wiring's periodic `queued` events): all requests queued on a
// paused scheduler (capacity 0), one progressAll pass, median CPU of 5.
const progressCpu: number[] = [];
for (let k = 0; k < REPLAYS; k++) {
  const s = schedulerWith(0)() as Scheduler;
  s.setCapacity(0);
  for (const r of reqs) s.submit({ id: r.id, client: r.client, cls: r.cls, deadline: Number.POSITIVE_INFINITY, units: r.units, preemptible: r.preemptible }, 0);
  let visited = 0;
  const c0 = process.cpuUsage();
  s.progressAll(() => {
    visited++;
  });
  const c = process.cpuUsage(c0);
  if (visited !== reqs.length) throw new Error(`progressAll visited ${visited} of ${reqs.length}`);
  progressCpu.push((c.user + c.system) / 1000);
}
progressCpu.sort((a, b) => a - b);
const progressMs = progressCpu[Math.floor(REPLAYS / 2)]!;
console.log(JSON.stringify({ progress_all: { waiters: reqs.length, cpu_ms: round(progressMs), ns_per_waiter: round((progressMs * 1e6) / reqs.length, 0) } }));

const [fifo, sched, noGrace] = results as [Result, Result, Result];
console.log(
  JSON.stringify({
    summary: 'scheduler vs fifo',
    cpu_per_call_ratio: round(sched.cpu_ns_per_call / fifo.cpu_ns_per_call, 2),
    eval_p99_wait_s: [sched.waits_s.eval!.p99, fifo.waits_s.eval!.p99],
    closing_p99_wait_s: [sched.waits_s['train-batch-closing']!.p99, fifo.waits_s['train-batch-closing']!.p99],
    makespan_ratio: round(sched.makespan_s / fifo.makespan_s, 3),
    preempted_with_grace_vs_without: [sched.preempted, noGrace.preempted],
  }),
);
