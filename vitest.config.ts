import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['protocol/test/**/*.test.ts', 'server/test/**/*.test.ts', 'envs/test/**/*.test.ts', 'clients/ts/test/**/*.test.ts', 'test/**/*.test.ts'],
    // Suites start real servers and real sandboxes; a 2-core machine needs room.
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // Docker-heavy suites must not all start containers at once on 2 cores.
    maxWorkers: 2,
  },
});
