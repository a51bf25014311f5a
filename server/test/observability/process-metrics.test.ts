// The process metrics (process-metrics.ts): prom-client's default set minus the GC histogram unless
// asked for (`gc_metrics`), on a real server's /metrics and against prom-client's own list.
import { collectDefaultMetrics, Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { processCollectors, registerProcessMetrics } from '../../src/observability/process-metrics.js';
import { startServer, type TestServer } from '../helpers/server.js';
import { metricValue, parseMetrics } from './prom-text.js';

const GC_METRIC = 'nodejs_gc_duration_seconds';

let server: TestServer | null = null;
afterEach(async () => {
  await server?.stop();
  server = null;
});

function names(reg: Registry): string[] {
  return reg
    .getMetricsAsArray()
    .map((m) => m.name)
    .sort();
}

/** The metric names a /metrics text declares (# TYPE lines: a histogram without samples has one too). */
function declared(text: string): Set<string> {
  return new Set([...text.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1] as string));
}

describe('process metrics', () => {
  it("are prom-client's default set without the GC histogram, and with it when asked", () => {
    const defaults = new Registry();
    collectDefaultMetrics({ register: defaults });
    const without = new Registry();
    registerProcessMetrics(without);
    const withGc = new Registry();
    registerProcessMetrics(withGc, { gc: true });
    expect(names(defaults)).toContain(GC_METRIC);
    expect(names(without)).toEqual(names(defaults).filter((n) => n !== GC_METRIC));
    expect(names(withGc)).toEqual(names(defaults));
    expect(processCollectors()).not.toContain('gc');
    expect(processCollectors({ gc: true })).toEqual(collectDefaultMetrics.metricsList);
  });

  it('a default server exposes them without nodejs_gc_duration_seconds; gc_metrics: true adds it', async () => {
    server = await startServer();
    let text = await (await fetch(server.httpUrl('/metrics'))).text();
    let samples = parseMetrics(text);
    expect(metricValue(samples, 'process_cpu_user_seconds_total')).toBeGreaterThan(0);
    expect(metricValue(samples, 'nodejs_eventloop_lag_seconds')).toBeGreaterThanOrEqual(0);
    expect(metricValue(samples, 'nodejs_heap_size_used_bytes')).toBeGreaterThan(0);
    expect(declared(text).has(GC_METRIC)).toBe(false);
    expect(samples.some((s) => s.name.startsWith(GC_METRIC))).toBe(false);
    await server.stop();
    server = null;

    server = await startServer({ gc_metrics: true });
    text = await (await fetch(server.httpUrl('/metrics'))).text();
    samples = parseMetrics(text);
    expect(declared(text).has(GC_METRIC)).toBe(true);
    expect(metricValue(samples, 'process_cpu_user_seconds_total')).toBeGreaterThan(0);
  });
});
