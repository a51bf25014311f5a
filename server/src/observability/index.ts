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

  /**
   * Counts archived episodes into the task statistics (on start, before the server listens): `source`
   * yields EpisodeSummary, e.g. the archive reader's readSummaries(location). An archive that cannot be
   * read (a new directory, a corrupt object) leaves the statistics with what was read, and says so.
   */
  async loadHistory(source: AsyncIterable<EpisodeSummary>, log: { info(o: object, m: string): void; warn(o: object, m: string): void }): Promise<number> {
    let n = 0;
    try {
      for await (const s of source) {
        this.taskStats.ingest(s);
        n++;
      }
      log.info({ episodes: n }, 'task statistics loaded from the archive');
    } catch (err) {
      log.warn({ err, episodes: n }, 'task statistics: the archive could not be read (whole or in part); counting on from what was read');
    }
    return n;
  }

  close(): void {
    for (const r of this.removers.splice(0)) r();
    this.metrics.close();
  }
}
