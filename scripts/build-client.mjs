// Bundles the TypeScript client into one ESM file usable from plain Node and the browser
// (the web inspector loads it). Runs on `npm install` through the prepare script.
import { build } from 'esbuild';
import { existsSync } from 'node:fs';

const entry = new URL('../clients/ts/src/index.ts', import.meta.url).pathname;
if (!existsSync(entry)) process.exit(0);
const common = { entryPoints: [entry], bundle: true, format: 'esm', sourcemap: true, logLevel: 'warning' };
await build({ ...common, platform: 'node', outfile: new URL('../clients/ts/dist/index.js', import.meta.url).pathname, external: ['ws'] });
await build({ ...common, platform: 'browser', outfile: new URL('../clients/ts/dist/browser.js', import.meta.url).pathname });
