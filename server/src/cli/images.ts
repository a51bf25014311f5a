// `sandgym images build [--only NAME] [--force]` and `sandgym images list`: the command line over the
// offline image builds of the sandbox layer (server/src/sandbox/images/).
import { buildImage, listImages } from '../sandbox/images/build.js';
import { RECIPES } from '../sandbox/images/recipes.js';
import { parseCommand, subcommand, UsageError, type CommandDef, type OptionDefs } from './args.js';
import { EXIT, UnavailableError } from './exit-codes.js';
import type { CliIo } from './io.js';

export const IMAGES_HELP = `Usage: sandgym images <build|list> [options]

Build the sandbox images locally (no registry needed) and list them.

  build [--only NAME] [--force]   build every image (or only NAME: full name or short, e.g. python);
                                  an image whose recipe is unchanged is skipped unless --force
  list                            each image: present (size, recipe hash) or missing

Images: ${RECIPES.map((r) => r.name).join(', ')}
Exit codes: 0 ok, 1 an image failed to build, 2 usage error, 4 no Docker daemon answers.`;

const BUILD = {
  name: 'images build',
  help: IMAGES_HELP,
  options: { only: { type: 'string' }, force: { type: 'boolean' } },
} as const satisfies CommandDef<OptionDefs>;

const LIST = { name: 'images list', help: IMAGES_HELP, options: {} } as const satisfies CommandDef<OptionDefs>;

/** A recipe matches its full name (sandgym/python:1), its name without tag, or its short name (python). */
function matches(name: string, wanted: string): boolean {
  return name === wanted || name.split(':')[0] === wanted || name.split('/')[1]?.split(':')[0] === wanted;
}

export async function runImages(argv: string[], io: CliIo): Promise<number> {
  const picked = subcommand('images', ['build', 'list'] as const, argv);
  if (typeof picked === 'string') {
    io.out(IMAGES_HELP + '\n');
    return picked === 'help' ? EXIT.OK : EXIT.USAGE;
  }
  if (picked.sub === 'list') {
    if (parseCommand(LIST, picked.argv) === null) {
      io.out(IMAGES_HELP + '\n');
      return EXIT.OK;
    }
    let rows: Awaited<ReturnType<typeof listImages>>;
    try {
      rows = await listImages();
    } catch (e) {
      throw new UnavailableError(`cannot list images: ${(e as Error).message}`, { cause: e });
    }
    for (const r of RECIPES) {
      const have = rows.find((x) => x.name === r.name);
      io.out(`${r.name}\t${have ? `present ${have.size} recipe=${have.hash}` : 'missing'}\t${r.description}\n`);
    }
    return EXIT.OK;
  }
  const parsed = parseCommand(BUILD, picked.argv);
  if (parsed === null) {
    io.out(IMAGES_HELP + '\n');
    return EXIT.OK;
  }
  const { only, force = false } = parsed.values;
  const selected = RECIPES.filter((r) => only === undefined || matches(r.name, only));
  if (selected.length === 0) throw new UsageError(`--only: no image named '${only}' (images: ${RECIPES.map((r) => r.name).join(', ')})`, BUILD.name);
  const log = (m: string) => io.err(`[images] ${m}\n`);
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
  return failed ? EXIT.FAILED : EXIT.OK;
}
