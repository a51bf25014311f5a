// Every production dependency must run on the oldest Node our package.json `engines` accepts. npm only warns
// when a dependency's `engines.node` excludes the running Node, so a new version of a dependency (or of one of
// its own dependencies) can raise the floor silently: @kubernetes/client-node 2.x pulled undici 8, which needs
// Node >= 22.19 and threw at import time on Node 20. This reads the lockfile, so it checks what `npm ci`
// installs, not what happens to be in node_modules.

import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';

const semver = createRequire(import.meta.url)('semver') as {
  satisfies(version: string, range: string, options?: { includePrerelease?: boolean }): boolean;
  minVersion(range: string): { version: string } | null;
};

interface LockEntry {
  version?: string;
  dev?: boolean;
  optional?: boolean;
  engines?: { node?: string } | string[];
}

const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { engines: { node: string } };
const lock = JSON.parse(readFileSync('package-lock.json', 'utf8')) as { packages: Record<string, LockEntry> };

describe('Node engines of production dependencies', () => {
  it('our floor is a real version', () => {
    expect(semver.minVersion(pkg.engines.node)?.version).toMatch(/^\d+\.\d+\.\d+$/);
  });

  it('every locked production dependency accepts the Node our engines allow (the latest of its major)', () => {
    const floorMajor = Number(semver.minVersion(pkg.engines.node)?.version.split('.')[0]);
    // The newest release line of our oldest supported major: what a user on "Node 20" runs today.
    const oldestSupported = `${floorMajor}.99.99`;
    const refused: string[] = [];
    let checked = 0;
    for (const [path, entry] of Object.entries(lock.packages)) {
      if (path === '' || entry.dev) continue;
      const range = Array.isArray(entry.engines) ? undefined : entry.engines?.node;
      if (!range) continue;
      checked++;
      if (!semver.satisfies(oldestSupported, range, { includePrerelease: true })) refused.push(`${path}@${entry.version}: engines.node "${range}"`);
    }
    expect(checked).toBeGreaterThan(10);
    expect(refused).toEqual([]);
  });
});
