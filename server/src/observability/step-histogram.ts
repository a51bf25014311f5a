// A Prometheus histogram for the step path. prom-client's Histogram.observe builds label objects and a
// hash string on every call (measured: the larger part of the metrics' per-step cost); here a series
// is a preallocated bucket array found once per label set, and an observation is a bucket search, two
// additions and an increment. The exposition is built only at scrape time, through prom-client's
// registry (the same text format as its own metrics). A series also counts the steps that were not
// timed (step-timing.ts), for the exact sandgym_steps_total.
import type { Metric, Registry } from 'prom-client';

export interface Series {
  /** Per-bucket (non-cumulative) counts; the last slot is +Inf. */
  readonly counts: Float64Array;
  sum: number;
  /** Observations (timed steps). */
  count: number;
  /** Every step, timed or not. */
  all: number;
}

interface Entry extends Series {
  readonly labels: Record<string, string>;
}

export class StepHistogram {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  private readonly series = new Map<string, Entry>();
  private readonly bounds: Float64Array;

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly labelName: string,
    buckets: readonly number[],
    registry: Registry,
  ) {
    this.bounds = Float64Array.from(buckets);
    registry.registerMetric(this as unknown as Metric);
  }

  /** The series of one label value (created once; keep it). */
  child(value: string): Series {
    let s = this.series.get(value);
    if (s === undefined) {
      s = { labels: { [this.labelName]: value }, counts: new Float64Array(this.bounds.length + 1), sum: 0, count: 0, all: 0 };
      this.series.set(value, s);
    }
    return s;
  }

  /** One observation into a series (le: the first bound >= v). */
  observe(s: Series, v: number): void {
    const b = this.bounds;
    let i = 0;
    while (i < b.length && v > (b[i] as number)) i++;
    (s.counts as Float64Array)[i]! += 1;
    s.sum += v;
    s.count += 1;
    s.all += 1;
  }

  /** A step that was not timed: counted in `all` only. */
  untimed(s: Series): void {
    s.all += 1;
  }

  /** Every series' step count, timed or not (sandgym_steps_total derives from it). */
  *totals(): Iterable<[Record<string, string>, number]> {
    for (const s of this.series.values()) yield [s.labels, s.all];
  }

  /** What prom-client's registry formats (same shape as its Histogram.get()). */
  async get(): Promise<{ name: string; help: string; type: string; aggregator: string; values: { value: number; labels: Record<string, string | number>; metricName: string }[] }> {
    const values: { value: number; labels: Record<string, string | number>; metricName: string }[] = [];
    for (const s of this.series.values()) {
      let acc = 0;
      for (let i = 0; i < this.bounds.length; i++) {
        acc += s.counts[i] as number;
        values.push({ value: acc, labels: { ...s.labels, le: this.bounds[i] as number }, metricName: `${this.name}_bucket` });
      }
      values.push({ value: s.count, labels: { ...s.labels, le: '+Inf' }, metricName: `${this.name}_bucket` });
      values.push({ value: s.sum, labels: { ...s.labels }, metricName: `${this.name}_sum` });
      values.push({ value: s.count, labels: { ...s.labels }, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  reset(): void {
    this.series.clear();
  }
}
