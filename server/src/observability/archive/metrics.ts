// The archive's counters on the server's /metrics (the metrics registry of observability/metrics.ts),
// read from the writer's stats at scrape time: nothing is added to the step path.
import { Counter, Gauge, type Registry } from 'prom-client';
import type { ArchiveStats, DropReason } from './writer.js';

const REASONS: readonly DropReason[] = ['memory', 'tenant_memory', 'episode_too_large', 'store_error'];

export function registerArchiveMetrics(reg: Registry, stats: () => ArchiveStats): void {
  const registers = [reg];
  new Counter({
    name: 'sandgym_archive_episodes_written_total',
    help: 'Episodes the trajectory archive wrote to its store.',
    registers,
    collect() {
      this.reset();
      this.inc(stats().episodes_written);
    },
  });
  new Counter({
    name: 'sandgym_archive_episodes_dropped_total',
    help: 'Episodes the trajectory archive dropped, by reason (memory: over --archive-max-mb; tenant_memory: one tenant over --archive-tenant-max-mb; episode_too_large; store_error: the store refused a batch after retries).',
    labelNames: ['reason'],
    registers,
    collect() {
      this.reset();
      const d = stats().episodes_dropped;
      for (const r of REASONS) this.inc({ reason: r }, d[r]);
    },
  });
  new Counter({
    name: 'sandgym_archive_written_bytes_total',
    help: 'Compressed bytes the trajectory archive put to its store.',
    registers,
    collect() {
      this.reset();
      this.inc(stats().bytes_written);
    },
  });
  new Counter({
    name: 'sandgym_archive_write_errors_total',
    help: 'Failed attempts to put an archive batch (each retry counts).',
    registers,
    collect() {
      this.reset();
      this.inc(stats().write_errors);
    },
  });
  new Gauge({
    name: 'sandgym_archive_held_bytes',
    help: 'Serialised bytes the trajectory archive holds in memory (against --archive-max-mb).',
    registers,
    collect() {
      this.set(stats().held_bytes);
    },
  });
}
