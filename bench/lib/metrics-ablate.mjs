// Attribution aid for bench/metrics-overhead.bench.ts (BENCH_ARMS): a preload (`node --import`) that
// switches one part of prom-client's process metrics off in a server, without a server option for it,
// so that an arm of the bench can show what that part costs. Loaded as
// `--import file:///…/metrics-ablate.mjs?parts=gc,eld`; `parts` is a comma list of:
//   gc       no PerformanceObserver on 'gc' entries (nodejs_gc_duration_seconds stays empty)
//   eld      no monitorEventLoopDelay histogram (the nodejs_eventloop_lag_* gauges read 0)
//   process  collectDefaultMetrics does nothing (no process_* / nodejs_* metrics at all)
// Bench-only: never loaded by the server on its own.
import { createRequire } from 'node:module';
import perfHooks from 'node:perf_hooks';

const parts = new Set((new URL(import.meta.url).searchParams.get('parts') ?? '').split(',').filter((p) => p !== ''));

if (parts.has('gc')) {
  const observe = perfHooks.PerformanceObserver.prototype.observe;
  perfHooks.PerformanceObserver.prototype.observe = function (opts) {
    const types = opts?.entryTypes ?? (opts?.type ? [opts.type] : []);
    if (types.includes('gc')) return;
    return observe.call(this, opts);
  };
}

if (parts.has('eld')) {
  perfHooks.monitorEventLoopDelay = () => ({
    enable() {},
    disable() {},
    reset() {},
    percentile: () => 0,
    min: 0,
    max: 0,
    mean: 0,
    stddev: 0,
  });
}

if (parts.has('process')) {
  const promClient = createRequire(import.meta.url)('prom-client');
  promClient.collectDefaultMetrics = () => undefined;
}
