// The process metrics of /metrics (process_*, nodejs_*): prom-client's default set, registered collector
// by collector so that one of them can be left out. Left out unless asked for (`gc_metrics: true`):
// nodejs_gc_duration_seconds. It needs a PerformanceObserver on 'gc' entries, and while one is
// installed V8 runs the young generation differently (measured on Node 20, an allocating loop: 2.6x
// fewer scavenges but each ~8x longer, +20-40% CPU; even an observer whose callback does nothing).
// On the batch throughput benchmark it was the larger part of what the metrics cost a no-op step
// (BENCHMARKS.md, "Metrics on the step path"). Every other collector here reads its values at scrape
// time, except the event-loop-delay monitor (a native libuv timer every 10 ms; no JavaScript runs).
import { createRequire } from 'node:module';
import { collectDefaultMetrics, type Registry } from 'prom-client';

type Collector = (registry: Registry, config: { eventLoopMonitoringPrecision: number }) => void;

/** prom-client's name for the GC collector in collectDefaultMetrics.metricsList. */
const GC_COLLECTOR = 'gc';

const require = createRequire(import.meta.url);

/**
 * One module per collector in prom-client's lib/metrics (what collectDefaultMetrics itself loads), each
 * named by a literal path so the dependency checker sees it (scripts/dynamic-imports.ts); loaded only when
 * registered. A collector prom-client lists that is missing here fails start-up loudly (below).
 */
const COLLECTORS: Record<string, () => Collector> = {
  processCpuTotal: () => require('prom-client/lib/metrics/processCpuTotal'),
  processStartTime: () => require('prom-client/lib/metrics/processStartTime'),
  osMemoryHeap: () => require('prom-client/lib/metrics/osMemoryHeap'),
  processOpenFileDescriptors: () => require('prom-client/lib/metrics/processOpenFileDescriptors'),
  processMaxFileDescriptors: () => require('prom-client/lib/metrics/processMaxFileDescriptors'),
  eventLoopLag: () => require('prom-client/lib/metrics/eventLoopLag'),
  processResources: () => require('prom-client/lib/metrics/processResources'),
  processHandles: () => require('prom-client/lib/metrics/processHandles'),
  processRequests: () => require('prom-client/lib/metrics/processRequests'),
  heapSizeAndUsed: () => require('prom-client/lib/metrics/heapSizeAndUsed'),
  heapSpacesSizeAndUsed: () => require('prom-client/lib/metrics/heapSpacesSizeAndUsed'),
  version: () => require('prom-client/lib/metrics/version'),
  gc: () => require('prom-client/lib/metrics/gc'),
};

export interface ProcessMetricsOptions {
  /** Also nodejs_gc_duration_seconds (a PerformanceObserver on every GC). Default false. */
  gc?: boolean;
}

/** The collectors registered: prom-client's default list, without 'gc' unless `opts.gc`. */
export function processCollectors(opts: ProcessMetricsOptions = {}): string[] {
  return collectDefaultMetrics.metricsList.filter((name) => opts.gc === true || name !== GC_COLLECTOR);
}

/** Registers the process metrics on `registry` (the same names, help and buckets as collectDefaultMetrics). */
export function registerProcessMetrics(registry: Registry, opts: ProcessMetricsOptions = {}): void {
  const config = { eventLoopMonitoringPrecision: 10 };
  for (const name of processCollectors(opts)) {
    const load = COLLECTORS[name];
    if (load === undefined) throw new Error(`prom-client lists a default collector '${name}' that process-metrics.ts does not know: add it to COLLECTORS`);
    load()(registry, config);
  }
}
