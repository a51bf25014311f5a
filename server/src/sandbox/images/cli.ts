// `sandgym images build [--only NAME] [--force]` and `sandgym images list`. Wired into the server CLI
// as `runImagesCli(argv)` where argv is what follows `images`.
import { buildImage, listImages } from './build.js';
import { RECIPES } from './recipes.js';

const USAGE = `usage: sandgym images build [--only NAME] [--force]
       sandgym images list
images: ${RECIPES.map((r) => r.name).join(', ')}`;

export async function runImagesCli(argv: string[]): Promise<number> {
  const [cmd, ...rest] = argv;
  const log = (m: string) => process.stderr.write(`[images] ${m}\n`);
  if (cmd === 'list') {
    const rows = await listImages();
    for (const r of RECIPES) {
      const have = rows.find((x) => x.name === r.name);
      process.stdout.write(`${r.name}\t${have ? `present ${have.size} recipe=${have.hash}` : 'missing'}\t${r.description}\n`);
    }
    return 0;
  }
  if (cmd !== 'build') {
    process.stderr.write(`${USAGE}\n`);
    return cmd === undefined || cmd === '--help' || cmd === '-h' ? 0 : 2;
  }
  let only: string | undefined;
  let force = false;
  for (let i = 0; i < rest.length; i++) {
    const a = rest[i];
    if (a === '--force') force = true;
    else if (a === '--only') only = rest[++i];
    else if (a?.startsWith('--only=')) only = a.slice('--only='.length);
    else {
      process.stderr.write(`unknown argument ${String(a)}\n${USAGE}\n`);
      return 2;
    }
  }
  const selected = RECIPES.filter((r) => !only || r.name === only || r.name.split(':')[0] === only || r.name.split('/')[1]?.split(':')[0] === only);
  if (selected.length === 0) {
    process.stderr.write(`no image named ${String(only)}\n${USAGE}\n`);
    return 2;
  }
  let failed = 0;
  for (const r of selected) {
    try {
      log(`${r.name}: checking`);
      const res = await buildImage(r, { force, log: (m) => log(`${r.name}: ${m}`) });
      log(`${r.name}: ${res.status} in ${res.seconds.toFixed(1)} s`);
    } catch (e) {
      failed += 1;
      log(`${r.name}: FAILED: ${(e as Error).message}`);
    }
  }
  return failed ? 1 : 0;
}
