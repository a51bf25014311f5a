#!/usr/bin/env node
// The sandgym CLI. An installed package runs the compiled JavaScript (server/dist, built by
// `npm run build` / `prepack`): plain Node, no TypeScript loader. In a source checkout the compiled
// tree is used only while it is current (its build stamp is newer than every source file);
// otherwise the TypeScript sources run through tsx (a devDependency), so an edit is never shadowed
// by a stale build.
import { existsSync, readdirSync, statSync } from 'node:fs';

const root = new URL('../', import.meta.url);
const compiled = new URL('server/dist/cli/main.js', root);
const source = new URL('server/src/cli/main.ts', root);
const SOURCE_TREES = ['protocol/src', 'envs/src', 'server/src', 'sandbox-contract', 'clients/ts/src'];

/** Newest mtime (ms) of the files under dir: the TypeScript and the assets the build copies next to it. */
function newest(dir) {
  let max = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (e.name === 'dist' || e.name === 'node_modules') continue;
    const p = `${dir}/${e.name}`;
    if (e.isDirectory()) max = Math.max(max, newest(p));
    else max = Math.max(max, statSync(p).mtimeMs);
  }
  return max;
}

function compiledIsCurrent() {
  if (!existsSync(compiled)) return false;
  if (!existsSync(source)) return true; // an installed package: only the compiled tree is shipped
  const stamp = new URL('server/dist/.build-stamp', root);
  if (!existsSync(stamp)) return false;
  const built = statSync(stamp).mtimeMs;
  const rootPath = decodeURIComponent(root.pathname);
  return SOURCE_TREES.every((t) => !existsSync(rootPath + t) || newest(rootPath + t) < built);
}

if (compiledIsCurrent()) {
  await import('../server/dist/cli/main.js');
} else {
  let register;
  try {
    ({ register } = await import('tsx/esm/api'));
  } catch {
    process.stderr.write('sandgym: no compiled build (server/dist) and no tsx to run the TypeScript sources: run `npm install` (or `npm run build`) first\n');
    process.exit(5);
  }
  register();
  await import('../server/src/cli/main.ts');
}
