// The plain series of step-histogram.ts (what the episode hook updates) give the same /metrics text as
// prom-client's Counter and Histogram fed the same values: names, help, types, labels, bucket bounds
// (inclusive `le`), cumulative counts, sums and the order of lines.
import { Counter, Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { PlainCounter, StepHistogram } from '../../src/observability/step-histogram.js';

// Not -1 as a bound here: prom-client 15 files a value above its top bound under the key -1 (its "no
// bound" sentinel), so with a -1 bucket it counts such values as <= -1 (see the last test).
const BUCKETS = [-2, 0, 0.5, 1, 10];
/** On bounds, between them, below the first, above the last (+Inf only), fractions and negatives. */
const VALUES = [-3, -2, -0.5, 0, 0, 0.25, 0.5, 0.75, 1, 1, 9.99, 10, 10.01, 1e6];

describe('plain counters and histograms', () => {
  it("expose exactly what prom-client's Counter and Histogram expose for the same observations", async () => {
    const ref = new Registry();
    const refCounter = new Counter({ name: 'x_total', help: 'A counter.', labelNames: ['env', 'task', 'outcome'], registers: [ref] });
    const refHist = new Histogram({ name: 'x_seconds', help: 'A histogram.', labelNames: ['env', 'task'], buckets: BUCKETS, registers: [ref] });
    const refOne = new Histogram({ name: 'y_seconds', help: 'One label.', labelNames: ['env'], buckets: BUCKETS, registers: [ref] });

    const reg = new Registry();
    const counter = new PlainCounter('x_total', 'A counter.', ['env', 'task', 'outcome'], reg);
    const hist = new StepHistogram('x_seconds', 'A histogram.', ['env', 'task'], BUCKETS, reg);
    const one = new StepHistogram('y_seconds', 'One label.', 'env', BUCKETS, reg);

    const envs = ['a/v0', 'b-v0', 'quote"back\\slash'];
    VALUES.forEach((v, i) => {
      const env = envs[i % envs.length] as string;
      const task = i % 2 === 0 ? 'even' : 'odd';
      refCounter.labels(env, task, 'success').inc();
      counter.child(env, task, 'success').n += 1;
      if (i % 3 === 0) {
        refCounter.labels(env, task, 'failure').inc(2);
        counter.child(env, task, 'failure').n += 2;
      }
      refHist.labels(env, task).observe(v);
      hist.observe(hist.child(env, task), v);
      refOne.labels(env).observe(v);
      one.observe(one.child(env), v);
    });
    expect(await reg.metrics()).toBe(await ref.metrics());
    expect((await reg.metrics()).length).toBeGreaterThan(1000);
  });

  it('a series is created once per label set and refuses a wrong number of label values', () => {
    const reg = new Registry();
    const counter = new PlainCounter('c_total', 'c', ['env', 'op'], reg);
    const hist = new StepHistogram('h', 'h', ['env', 'task'], [1], reg);
    expect(counter.child('e', 'step')).toBe(counter.child('e', 'step'));
    expect(counter.child('e', 'step')).not.toBe(counter.child('e', 'reset'));
    expect(hist.child('e', 't')).toBe(hist.child('e', 't'));
    expect(() => counter.child('e')).toThrow(/expected 2 label values, got 1/);
    expect(() => hist.child('e', 't', 'x')).toThrow(/expected 2 label values, got 3/);
  });

  it('a value above the top bound is in +Inf only, also with a bucket at -1 (sandgym_episode_reward has one)', async () => {
    const reg = new Registry();
    const hist = new StepHistogram('r', 'r', 'env', [-1, 0, 1, 100], reg);
    hist.observe(hist.child('e'), 250);
    hist.observe(hist.child('e'), -1);
    const text = await reg.metrics();
    expect(text).toContain('r_bucket{le="-1",env="e"} 1\n');
    expect(text).toContain('r_bucket{le="100",env="e"} 1\n');
    expect(text).toContain('r_bucket{le="+Inf",env="e"} 2\n');
    expect(text).toContain('r_sum{env="e"} 249\n');
  });
});
