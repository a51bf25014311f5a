// Prometheus metrics of the admission queue (docs/SCHEDULING.md, docs/OBSERVABILITY.md), registered on
// the server's metrics registry beside metrics.ts's. Labels are the operator's configured priority
// classes and fixed reason/outcome words: nothing a client sends becomes a label (a class a client
// names is refused before it reaches the queue).
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { SchedulerDriver } from './scheduler-driver.js';

/** Queue waits run from milliseconds (a free sandbox) to the longest queue timeout (minutes). */
const WAIT_BUCKETS = [0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800];

/** Registers the scheduler's metrics on `registry` and feeds them from the driver; returns the remover. */
export function registerSchedulerMetrics(registry: Registry, drv: SchedulerDriver): () => void {
  const registers = [registry];
  const classes = drv.config.classes;
  new Gauge({
    name: 'sandgym_scheduler_queued',
    help: 'Requests waiting in the admission queue, by priority class.',
    labelNames: ['class'],
    registers,
    collect: function () {
      const by = drv.stats().queued_by_class;
      for (const c of classes) this.set({ class: c }, by[c] ?? 0);
    },
  });
  new Gauge({
    name: 'sandgym_scheduler_units',
    help: 'Sandbox units of the admission queue: capacity, held (admitted), reclaiming (being preempted).',
    labelNames: ['state'],
    registers,
    collect: function () {
      const s = drv.stats();
      this.set({ state: 'capacity' }, s.capacity);
      this.set({ state: 'held' }, s.held);
      this.set({ state: 'reclaiming' }, s.reclaiming);
    },
  });
  const admitted = new Counter({
    name: 'sandgym_scheduler_admitted_total',
    help: 'Requests admitted (given their sandboxes), by class.',
    labelNames: ['class'],
    registers,
  });
  const wait = new Histogram({
    name: 'sandgym_scheduler_wait_seconds',
    help: 'Time from queueing to admission, by class.',
    labelNames: ['class'],
    buckets: WAIT_BUCKETS,
    registers,
  });
  const expired = new Counter({
    name: 'sandgym_scheduler_expired_total',
    help: 'Requests that left the queue unadmitted at their deadline (CAPACITY queue_timeout), by class and reason.',
    labelNames: ['class', 'reason'],
    registers,
  });
  const refused = new Counter({
    name: 'sandgym_scheduler_refused_total',
    help: 'Requests refused at once (CAPACITY queue_full), by class and reason.',
    labelNames: ['class', 'reason'],
    registers,
  });
  const preempted = new Counter({
    name: 'sandgym_scheduler_preempted_total',
    help: 'Holders preempted (closed with PREEMPTED), by their class.',
    labelNames: ['class'],
    registers,
  });
  const retried = new Counter({
    name: 'sandgym_scheduler_creation_failures_total',
    help: 'Sandbox creations that failed after admission, by class and what the scheduler did (requeued, recreate, give_up).',
    labelNames: ['class', 'action'],
    registers,
  });
  // Only configured classes are labels; anything else would be a bug, counted under _other.
  const known = new Set(classes);
  const cls = (c: string): string => (known.has(c) ? c : '_other');
  drv.observer = {
    admitted: (c, ms) => {
      admitted.inc({ class: cls(c) });
      wait.observe({ class: cls(c) }, Math.max(0, ms) / 1000);
    },
    expired: (c, reason) => expired.inc({ class: cls(c), reason }),
    refused: (c, reason) => refused.inc({ class: cls(c), reason }),
    preempted: (c) => preempted.inc({ class: cls(c) }),
    retried: (c, action) => retried.inc({ class: cls(c), action }),
  };
  return () => {
    drv.observer = null;
    for (const n of [
      'sandgym_scheduler_queued',
      'sandgym_scheduler_units',
      'sandgym_scheduler_admitted_total',
      'sandgym_scheduler_wait_seconds',
      'sandgym_scheduler_expired_total',
      'sandgym_scheduler_refused_total',
      'sandgym_scheduler_preempted_total',
      'sandgym_scheduler_creation_failures_total',
    ]) {
      registry.removeSingleMetric(n);
    }
  };
}
