// Plays a short wordle-v0 episode in the inspector and screenshots it. The browser test calls
// playScreenshotEpisode() and saves test-artifacts/inspector.png; running this file directly also
// refreshes the committed docs/img/inspector.png that README and docs/DEBUGGING.md show:
//   npx tsx server/test/inspect/screenshot.ts
import { copyFileSync, mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { browserUnavailable, launchBrowser, startInspectServer, waitOps } from './harness.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
export const ARTIFACT_PNG = resolve(root, 'test-artifacts/inspector.png');
export const DOCS_PNG = resolve(root, 'docs/img/inspector.png');

/** The episode shown: a fixed word so the rubric components (including a negative one) all appear. */
export const SCREENSHOT_GUESSES = ['crane', 'xyzzy', 'slate', 'plant'];

export async function playScreenshotEpisode(page: Page, base: string, outFile = ARTIFACT_PNG): Promise<void> {
  await page.goto(`${base}/inspect?env=wordle-v0&seed=7`);
  await waitOps(page, 1);
  await page.click('#options-box summary');
  await page.fill('#options', '{"word": "plant"}');
  await page.click('#make-reset');
  await waitOps(page, 2);
  let ops = 2;
  for (const guess of SCREENSHOT_GUESSES) {
    await page.fill('[data-param="text"]', guess);
    await page.click('#step');
    await waitOps(page, ++ops);
  }
  // Show the end of the episode in the transcript and the latest frames.
  await page.evaluate(() => {
    const transcript = document.getElementById('transcript');
    if (transcript) transcript.scrollTop = transcript.scrollHeight;
    const frames = document.getElementById('frames');
    if (frames) frames.scrollTop = frames.scrollHeight;
  });
  mkdirSync(dirname(outFile), { recursive: true });
  await page.screenshot({ path: outFile });
}

async function main(): Promise<void> {
  const why = browserUnavailable();
  if (why) throw new Error(why);
  const server = await startInspectServer();
  const browser = await launchBrowser();
  try {
    await playScreenshotEpisode(browser.page, server.base);
    if (browser.errors.length > 0) throw new Error(`page errors: ${browser.errors.join('\n')}`);
    mkdirSync(dirname(DOCS_PNG), { recursive: true });
    copyFileSync(ARTIFACT_PNG, DOCS_PNG);
    process.stdout.write(`wrote ${ARTIFACT_PNG} and ${DOCS_PNG}\n`);
  } finally {
    await browser.close();
    await server.close();
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((err: unknown) => {
    process.stderr.write(`${String((err as Error).stack ?? err)}\n`);
    process.exit(1);
  });
}
