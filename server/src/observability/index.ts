// The server's observability, wired once per server (app.ts): the episode tracker, Prometheus metrics
// and per-task statistics, all fed by the episode hook. Disabled (`metrics: false`), nothing is
// registered and the session and connection build no events at all.
import type { ServerCore } from '../server-core.js';
import { EpisodeTracker, type EpisodeSummary } from './episode-tracker.js';
import { ServerMetrics, type MetricsOptions } from './metrics.js';
import { TaskStats } from './task-stats.js';

export { EpisodeTracker, ServerMetrics, TaskStats };
export type { EpisodeSummary };

export class Observability {
  readonly tracker: EpisodeTracker;
  readonly metrics: ServerMetrics;
  readonly taskStats: TaskStats;
  private readonly removers: (() => void)[] = [];

  constructor(core: ServerCore, opts: MetricsOptions = {}) {
    this.tracker = new EpisodeTracker(core.log);
    this.taskStats = new TaskStats(core.registry);
    // Stats first: an env's next reset sees the episode that just ended.
    this.removers.push(this.tracker.onFinished((s) => this.taskStats.ingest(s)));
    this.metrics = new ServerMetrics(core, this.tracker, opts);
    // The tracker before metrics: metrics count a finished episode from the tracker's summary.
    this.removers.push(core.observers.add(this.tracker));
    this.removers.push(core.observers.add(this.metrics));
    core.taskStatsFor = (envId) => this.taskStats.viewFor(envId);
  }

  close(): void {
    for (const r of this.removers.splice(0)) r();
    this.metrics.close();
  }
}
