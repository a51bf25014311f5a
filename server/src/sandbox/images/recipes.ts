// Image recipes for `sandgym images build`. No registry is reachable, so every image is a root
// filesystem built on this machine (busybox-static, or debootstrap against the machine's configured
// Debian mirror) and `docker import`ed. A recipe's hash is stored as a label; a build is skipped when
// an image with the same hash exists, so reruns are instant.
import { createHash } from 'node:crypto';

export interface ImageRecipe {
  name: string;
  description: string;
  kind: 'busybox' | 'debootstrap';
  /** debootstrap only: packages added to --variant=minbase. */
  packages?: string[];
  /** Bumped by hand when the build steps change in a way the fields above do not show. */
  revision: number;
}

export const RECIPES: ImageRecipe[] = [
  {
    name: 'sandgym/busybox:1',
    description: 'busybox-static only (~2 MB): fast sandboxes for tests and shell tasks',
    kind: 'busybox',
    revision: 2,
  },
  {
    name: 'sandgym/python:1',
    // nodejs lives here too (rather than a separate sandgym/node:1): the coding env grades Python with
    // pytest and TypeScript with `node --test`, and one debootstrap run is ~85 s on this machine.
    description: 'Debian minbase + python3, pytest and nodejs (no git, no network tools)',
    kind: 'debootstrap',
    packages: ['python3', 'python3-pytest', 'nodejs'],
    revision: 2,
  },
];

export const RECIPE_LABEL = 'sandgym.recipe';

export function recipeHash(r: ImageRecipe, suite: string): string {
  return createHash('sha256')
    .update(JSON.stringify({ name: r.name, kind: r.kind, packages: r.packages ?? [], revision: r.revision, suite }))
    .digest('hex')
    .slice(0, 16);
}
