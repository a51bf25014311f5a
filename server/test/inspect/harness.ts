// Shared by the inspector tests and the screenshot script: a real sandgym server (buildApp + the
// inspect plugin, listening on 127.0.0.1:0) and Debian's Chromium driven by playwright-core.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { buildApp, type SandgymApp } from '../../src/app.js';
import type { ServerConfig } from '../../src/config.js';
import { inspectPlugin } from '../../src/inspect/plugin.js';

export const CHROMIUM_PATH = process.env.SANDGYM_CHROMIUM ?? '/usr/bin/chromium';

/** null when Chromium is usable; otherwise why not (the suite skips, or fails under SANDGYM_REQUIRE_BROWSER=1). */
export function browserUnavailable(): string | null {
  if (!existsSync(CHROMIUM_PATH)) return `no Chromium at ${CHROMIUM_PATH} (install Debian's chromium, or set SANDGYM_CHROMIUM)`;
  return null;
}

export const browserRequired = process.env.SANDGYM_REQUIRE_BROWSER === '1';

export interface InspectServer {
  sg: SandgymApp;
  /** http://127.0.0.1:PORT */
  base: string;
  close(): Promise<void>;
}

export async function startInspectServer(config: Partial<ServerConfig> = {}): Promise<InspectServer> {
  const sg = await buildApp({ fixtures: true, log_level: 'error', host: '127.0.0.1', port: 0, ...config });
  // app.ts registers the plugin for `sandgym serve`; until it does (or if it ever stops), register it
  // here the same way. after() first: plugins registered without await are only loaded then.
  await sg.app.after();
  if (!sg.app.hasRoute({ method: 'GET', url: '/inspect' })) await sg.app.register(inspectPlugin);
  await sg.app.listen({ host: '127.0.0.1', port: 0 });
  const addr = sg.app.server.address();
  if (!addr || typeof addr === 'string') throw new Error('not listening');
  return { sg, base: `http://127.0.0.1:${addr.port}`, close: () => sg.app.close() };
}

export interface BrowserSession {
  context: BrowserContext;
  page: Page;
  /** Console errors and uncaught page errors seen so far (a clean page has none). */
  errors: string[];
  close(): Promise<void>;
}

export async function launchBrowser(viewport = { width: 1440, height: 900 }): Promise<BrowserSession> {
  const userDataDir = mkdtempSync(join(tmpdir(), 'sandgym-chromium-'));
  // A fresh profile per run: no state leaks between tests (playwright wants it as launchPersistentContext's argument).
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
    viewport,
    deviceScaleFactor: 1,
    acceptDownloads: true,
  });
  const page = context.pages()[0] ?? (await context.newPage());
  const errors: string[] = [];
  page.on('console', (msg) => {
    if (msg.type() === 'error') errors.push(msg.text());
  });
  page.on('pageerror', (err) => errors.push(String(err)));
  return {
    context,
    page,
    errors,
    async close() {
      await context.close().catch(() => undefined);
      rmSync(userDataDir, { recursive: true, force: true });
    },
  };
}

/** Waits until the inspector has finished `n` operations in total (connect, make+reset, step, ...). */
export async function waitOps(page: Page, n: number): Promise<void> {
  await page.waitForFunction((want) => window.__sandgymInspector?.ops >= want && !window.__sandgymInspector.busy, n, { timeout: 15_000 });
}
