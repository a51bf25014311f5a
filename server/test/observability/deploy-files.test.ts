// deploy/grafana/sandgym-dashboard.json and deploy/prometheus/scrape.yml stay true to the server: every
// metric a dashboard query reads is one a real server's /metrics exposes (after a few episodes, so the
// labelled series exist), with the labels the queries group by, and the scrape config targets that route.
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.js';
import { driveMix } from './archive-helpers.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const dashboard = JSON.parse(readFileSync(resolve(root, 'deploy/grafana/sandgym-dashboard.json'), 'utf8')) as {
  uid: string;
  panels: { type: string; targets?: { expr: string }[] }[];
};
const scrape = readFileSync(resolve(root, 'deploy/prometheus/scrape.yml'), 'utf8');

let server: TestServer;
let exposition = '';
beforeAll(async () => {
  server = await startServer();
  await driveMix(server.url());
  exposition = await (await fetch(server.httpUrl('/metrics'))).text();
}, 60_000);
afterAll(() => server?.stop());

/** The series names a query reads (histogram suffixes kept: _bucket must exist as such). */
function metricsOf(expr: string): string[] {
  return [...expr.matchAll(/\b(sandgym_[a-z_]+)/g)].map((m) => m[1] as string);
}

describe('deploy files', () => {
  const exprs = dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr));

  it('the dashboard has queries, and each reads metrics a server exposes', () => {
    expect(exprs.length).toBeGreaterThan(15);
    // Every registered metric has a TYPE line, with or without series yet; a histogram's series are name_bucket/_sum/_count.
    const exposed = new Set(
      [...exposition.matchAll(/^# TYPE (sandgym_[a-z_]+) (\w+)$/gm)].flatMap((m) =>
        m[2] === 'histogram' ? [`${m[1]}_bucket`, `${m[1]}_sum`, `${m[1]}_count`] : [m[1]],
      ),
    );
    const missing = [...new Set(exprs.flatMap(metricsOf))].filter((m) => !exposed.has(m));
    expect(missing).toEqual([]);
  });

  it('the labels the dashboard groups and filters by are labels of those metrics', () => {
    for (const expr of exprs) {
      for (const m of new Set(metricsOf(expr))) {
        const line = exposition.split('\n').find((l) => l.startsWith(`${m}{`));
        // A labelled metric with no series yet (no graded zero in the mix) shows no labels to check.
        if (line === undefined) continue;
        const labels = new Set([...(line ?? '').matchAll(/([a-z_]+)="/g)].map((x) => x[1]));
        const wanted = [...expr.matchAll(new RegExp(`${m}\\{([^}]*)\\}`, 'g'))].flatMap((x) =>
          [...(x[1] as string).matchAll(/([a-z_]+)\s*=~?/g)].map((y) => y[1]),
        );
        for (const w of wanted) expect(labels, `${m} has label ${w} (${expr})`).toContain(w);
      }
    }
  });

  it('the scrape config scrapes /metrics with a bearer token', () => {
    expect(scrape).toMatch(/^\s+metrics_path: \/metrics$/m);
    expect(scrape).toMatch(/^\s+type: Bearer$/m);
    expect(dashboard.uid).toBe('sandgym-overview');
  });
});
