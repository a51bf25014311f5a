// Docs stay true: the README's TypeScript episode runs as written against a real server
// (only the URL and the package import are rewritten to this checkout).
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { wsPath } from '../../protocol/src/index.js';
import { REPO_ROOT, startServer, type TestServer } from '../helpers/server.js';

const run = promisify(execFile);

/** The first fenced block of `lang` after the heading `heading`. */
function snippetAfter(markdown: string, heading: string, lang: string): string {
  const at = markdown.indexOf(heading);
  if (at < 0) throw new Error(`README has no heading ${heading}`);
  const fence = '```' + lang + '\n';
  const start = markdown.indexOf(fence, at);
  if (start < 0) throw new Error(`no ${lang} block after ${heading}`);
  const end = markdown.indexOf('\n```', start + fence.length);
  return markdown.slice(start + fence.length, end + 1);
}

describe('README', () => {
  let server: TestServer;
  let dir: string;
  beforeAll(async () => {
    server = await startServer({ fixtures: false });
    dir = await mkdtemp(join(tmpdir(), 'sandgym-readme-'));
  });
  afterAll(async () => {
    await server?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('the TypeScript episode runs as written and prints per-step rewards', async () => {
    const readme = await readFile(join(REPO_ROOT, 'README.md'), 'utf8');
    const code = snippetAfter(readme, '## An episode in TypeScript', 'ts');
    // The README's URL is the current major's endpoint.
    const readmeUrl = `'ws://127.0.0.1:8765${wsPath()}'`;
    expect(code).toContain(readmeUrl);
    const rewritten = code
      .replace(readmeUrl, JSON.stringify(server.url))
      .replace("from 'sandgym/client'", `from ${JSON.stringify(join(REPO_ROOT, 'clients/ts/src/index.ts'))}`);
    const file = join(dir, 'episode.mts');
    await writeFile(file, rewritten);
    const { stdout } = await run(process.execPath, ['--import', 'tsx', file], { cwd: REPO_ROOT, timeout: 60_000 });
    const lines = stdout.trim().split('\n');
    expect(lines.length).toBeGreaterThan(0);
    // Each printed line is "<observation> <reward> <components>": the rewards are numbers.
    expect(stdout).toMatch(/-?\d+(\.\d+)?/);
    expect(stdout).toContain('information');
  });
});
