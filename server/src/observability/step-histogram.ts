// Plain metrics for the paths the episode hook runs on (every step, every reset, every episode's end).
// prom-client's Counter.inc and Histogram.observe build a label object and hash it into a string on
// every call, also through a labels() child (measured: the larger part of the metrics' cost per step,
// and ~3-7 µs of a 1-step episode's reset and end). Here a series is found once per label set (the
// caller keeps it, or looks it up by one joined key), an increment is an addition, and an observation
// is a bucket search and three additions into a preallocated array. The exposition is built only at
// scrape time, through prom-client's registry (the same text format as its own metrics). A histogram
// series also counts the steps that were not timed (step-timing.ts), for the exact sandgym_steps_total.
import type { Metric, Registry } from 'prom-client';

export interface Series {
  /** Per-bucket (non-cumulative) counts; the last slot is +Inf. */
  readonly counts: Float64Array;
  sum: number;
  /** Observations (timed steps, for the step histogram). */
  count: number;
  /** Every step, timed or not (step histogram only). */
  all: number;
}

/** One counter series: `n` is its value. */
export interface Cell {
  n: number;
}

interface Labelled {
  readonly labels: Record<string, string>;
}

/** The labels object of one series (label names in declared order). */
function labelsOf(names: readonly string[], values: readonly string[]): Record<string, string> {
  if (values.length !== names.length) throw new Error(`expected ${names.length} label values, got ${values.length}`);
  const labels: Record<string, string> = {};
  names.forEach((n, i) => {
    labels[n] = values[i] as string;
  });
  return labels;
}

/** A histogram of plain series (name kept from its first use: the step-duration histogram). */
export class StepHistogram {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  private readonly series = new Map<string, Series & Labelled>();
  private readonly bounds: Float64Array;
  private readonly labelNames: readonly string[];

  constructor(
    readonly name: string,
    readonly help: string,
    labelNames: string | readonly string[],
    buckets: readonly number[],
    registry: Registry,
  ) {
    this.labelNames = typeof labelNames === 'string' ? [labelNames] : labelNames;
    this.bounds = Float64Array.from(buckets);
    registry.registerMetric(this as unknown as Metric);
  }

  /** The series of one label set, in label-name order (created once; keep it or look it up per call). */
  child(...values: string[]): Series {
    const key = values.length === 1 ? (values[0] as string) : values.join('\u0000');
    let s = this.series.get(key);
    if (s === undefined) {
      s = { labels: labelsOf(this.labelNames, values), counts: new Float64Array(this.bounds.length + 1), sum: 0, count: 0, all: 0 };
      this.series.set(key, s);
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

  /** What prom-client's registry formats (same shape and order as its Histogram.get(): `le` first). */
  async get(): Promise<{
    name: string;
    help: string;
    type: string;
    aggregator: string;
    values: { value: number; labels: Record<string, string | number>; metricName: string }[];
  }> {
    const values: { value: number; labels: Record<string, string | number>; metricName: string }[] = [];
    for (const s of this.series.values()) {
      let acc = 0;
      for (let i = 0; i < this.bounds.length; i++) {
        acc += s.counts[i] as number;
        values.push({ value: acc, labels: { le: this.bounds[i] as number, ...s.labels }, metricName: `${this.name}_bucket` });
      }
      values.push({ value: s.count, labels: { le: '+Inf', ...s.labels }, metricName: `${this.name}_bucket` });
      values.push({ value: s.sum, labels: { ...s.labels }, metricName: `${this.name}_sum` });
      values.push({ value: s.count, labels: { ...s.labels }, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  reset(): void {
    this.series.clear();
  }
}

/** A counter of plain cells: `child(...)` once per label set, then `cell.n += 1`. */
export class PlainCounter {
  readonly type = 'counter';
  readonly aggregator = 'sum';
  private readonly cells = new Map<string, Cell & Labelled>();

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly labelNames: readonly string[],
    registry: Registry,
  ) {
    registry.registerMetric(this as unknown as Metric);
  }

  /** The cell of one label set, in label-name order (created at 0 once). */
  child(...values: string[]): Cell {
    const key = values.length === 1 ? (values[0] as string) : values.join('\u0000');
    let c = this.cells.get(key);
    if (c === undefined) {
      c = { labels: labelsOf(this.labelNames, values), n: 0 };
      this.cells.set(key, c);
    }
    return c;
  }

  /** What prom-client's registry formats (same shape as its Counter.get()). */
  async get(): Promise<{ name: string; help: string; type: string; aggregator: string; values: { value: number; labels: Record<string, string> }[] }> {
    const values: { value: number; labels: Record<string, string> }[] = [];
    for (const c of this.cells.values()) values.push({ value: c.n, labels: { ...c.labels } });
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  reset(): void {
    this.cells.clear();
  }
}
