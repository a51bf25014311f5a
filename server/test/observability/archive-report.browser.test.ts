// `sandgym report`'s page in real headless Chromium (Debian's chromium through playwright-core): an archive
// written by a real server for a mix of episodes, rendered with no page error and no request leaving the
// page (self-contained), every chart drawn with the archive's numbers, and a screenshot saved to
// test-artifacts/archive-report.png. Skips only when Chromium is missing; fails under SANDGYM_REQUIRE_BROWSER=1.
import { mkdirSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadArchive } from '../../src/observability/archive/reader.js';
import { renderReport } from '../../src/observability/archive/report.js';
import { browserRequired, browserUnavailable, launchBrowser, type BrowserSession } from '../inspect/harness.js';
import { archivedServer, driveMix } from './archive-helpers.js';

const why = browserUnavailable();
const ARTIFACT = resolve(dirname(fileURLToPath(import.meta.url)), '../../../test-artifacts/archive-report.png');

if (why && browserRequired) {
  describe('archive report in Chromium', () => {
    it('has a browser to run in', () => {
      throw new Error(`SANDGYM_REQUIRE_BROWSER=1 but ${why}`);
    });
  });
}

describe.skipIf(why !== null)(`archive report in Chromium${why ? ` (skipped: ${why})` : ''}`, () => {
  let dir: string;
  let page: string;
  let browser: BrowserSession;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sandgym-report-'));
    const { server } = await archivedServer({ location: join(dir, 'archive') });
    // Two rounds, so the time axis has a span and every cause appears.
    await driveMix(server.url());
    await driveMix(server.url());
    await server.stop();
    const records = await loadArchive(join(dir, 'archive'));
    page = join(dir, 'report.html');
    await writeFile(page, renderReport(records, 'archive of the browser test'));
    browser = await launchBrowser({ width: 1280, height: 1000 });
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('renders every chart from the file alone, with the archive numbers, and saves a screenshot', async () => {
    const requests: string[] = [];
    browser.page.on('request', (r) => requests.push(r.url()));
    const url = pathToFileURL(page).href;
    await browser.page.goto(url);
    // Only the page itself was loaded: no script, stylesheet, font or image from anywhere.
    expect(requests).toEqual([url]);
    expect(browser.errors).toEqual([]);
    expect(await browser.page.textContent('#stat-episodes b')).toBe('16');
    expect(await browser.page.textContent('#stat-pass')).toContain('pass rate (6/10)');
    const charts = await browser.page.$$eval('figure svg', (svgs) =>
      svgs.map((s) => ({ label: s.getAttribute('aria-label'), shapes: s.querySelectorAll('rect').length, w: s.getBoundingClientRect().width })),
    );
    expect(charts.map((c) => c.label)).toEqual([
      'Reward distribution (score of scored episodes)',
      'pass rate per task',
      'Episode lengths (steps)',
      'failure causes over time',
    ]);
    for (const c of charts) {
      expect(c.shapes).toBeGreaterThan(0);
      expect(c.w).toBeGreaterThan(100);
    }
    const rates = await browser.page.$$eval('g.task', (gs) => gs.map((g) => [g.getAttribute('data-task'), Number(g.getAttribute('data-rate'))]));
    expect(rates).toEqual([
      ['math-v0', 1 / 3],
      ['test/counter-v0', 1],
      ['test/truncate-v0', 1],
    ]);
    const legend = await browser.page.textContent('.legend');
    // Causes as sandgym_failures_total names them: 2 rounds x (1 invalid action, 1 env error, 2 abandoned, 2 math not solved).
    for (const cause of ['invalid_action (2)', 'env_error (2)', 'abandoned (4)', 'not_solved (4)']) expect(legend).toContain(cause);
    mkdirSync(dirname(ARTIFACT), { recursive: true });
    await browser.page.screenshot({ path: ARTIFACT, fullPage: true });
  }, 60_000);
});
