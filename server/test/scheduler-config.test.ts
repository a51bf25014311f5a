// The `scheduling` config section: defaults, and every inconsistency refused at startup with a typed
// ConfigError naming the key (never a surprise mid-training).
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ConfigError, resolveConfig, resolveScheduling, type SchedulingConfig } from '../src/config.js';
import { SchedulerDriver } from '../src/admission/scheduler-driver.js';

const sha = (t: string) => createHash('sha256').update(t).digest('hex');

function refused(scheduling: unknown): ConfigError {
  try {
    resolveConfig({ scheduling: scheduling as SchedulingConfig });
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return e as ConfigError;
  }
  throw new Error(`accepted: ${JSON.stringify(scheduling)}`);
}

describe('scheduling config', () => {
  it('defaults: four classes, train by default, background preemptible, a default grant from train down', () => {
    const r = resolveScheduling();
    expect(r.classes).toEqual(['eval', 'train-batch-closing', 'train', 'background']);
    expect(r.default_class).toBe('train');
    expect(r.preemptible_classes).toEqual(['background']);
    expect(r.default_grant).toEqual({ classes: ['train', 'background'], weight: 1 });
    expect(r.max_queue_timeout_ms).toBe(600_000);
  });

  it('refuses inconsistent sections with the offending key', () => {
    expect(refused({ classes: ['a', 'a'] }).key).toBe('scheduling/classes');
    expect(refused({ classes: ['a', 'b'], default_class: 'c' }).key).toBe('scheduling/default_class');
    expect(refused({ preemptible_classes: ['nope'] }).key).toBe('scheduling/preemptible_classes');
    expect(refused({ grants: [{ token_sha256: sha('x'), classes: ['vip'] }] }).key).toBe('scheduling/grants/0/classes');
    expect(
      refused({
        grants: [
          { token_sha256: sha('x'), classes: ['train'] },
          { token_sha256: sha('x').toUpperCase(), classes: ['eval'] },
        ],
      }).key,
    ).toBe('scheduling/grants/1/token_sha256');
    expect(refused({ default_grant: { classes: ['vip'] } }).key).toBe('scheduling/default_grant/classes');
    expect(refused({ max_queued: 10, max_queued_per_client: 11 }).key).toBe('scheduling/max_queued_per_client');
  });

  it('refuses malformed values through the schema (typed, key named)', () => {
    for (const bad of [
      { grants: [{ token_sha256: 'not-hex', classes: ['train'] }] },
      { grants: [{ token_sha256: sha('x'), classes: ['train'], weight: 0 }] },
      { grants: [{ token_sha256: sha('x'), classes: ['train'], weight: -1 }] },
      { grants: [{ classes: ['train'] }] },
      { classes: [] },
      { classes: ['Has Space'] },
      { max_queue_timeout_ms: -1 },
      { max_queue_timeout_ms: 1e300 },
      { max_group_size: 0 },
      { retry_budget: 1.5 },
      { preempt_grace_ms: 'soon' },
      { enabled: 'yes' },
      { surprise: true },
      'on',
    ]) {
      expect(refused(bad).key, JSON.stringify(bad)).toMatch(/^scheduling/);
    }
  });

  it('a token grant sets the client key, classes and weight; the default class falls back inside the grant', () => {
    const drv = new SchedulerDriver(resolveScheduling({ grants: [{ token_sha256: sha('tok'), classes: ['eval'], weight: 5 }] }), 4);
    const { client, grant } = drv.clientOf(sha('tok'), 'ignored', 'c1');
    expect(client).toBe(`token:${sha('tok')}`);
    expect(grant).toEqual({ classes: ['eval'], weight: 5 });
    // train (the default class) is not granted: the highest granted class below it, else the lowest granted.
    expect(drv.classesOf(grant)).toEqual({ allowed: ['eval'], dflt: 'eval' });
    expect(drv.clientOf(null, 'g', 'c1').client).toBe('conn:g');
    expect(drv.clientOf(null, undefined, 'c1').client).toBe('conn:c1');
    drv.close();
  });
});
