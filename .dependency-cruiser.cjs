// The dependency direction of docs/ARCHITECTURE.md, checked by `npm run depcheck` (part of `npm test`).
// Every import counts: static, type-only (tsPreCompilationDeps), re-exports and import() with a literal
// specifier. import() of a specifier held in a variable is invisible here; scripts/dynamic-imports.ts
// (also run by depcheck) refuses those in product code outside a short allow-list.
/** Anything of ours (product, tests, benchmarks, scripts). */
const OURS = '^(protocol|sandbox-contract|envs|server|clients|bench|test|scripts|bin)/';
/** Product code: what ships (not tests, benchmarks or build scripts such as protocol/scripts). */
const PRODUCT = '^(protocol/src|sandbox-contract|envs/src|server/src|clients/ts/src|bin)/';

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'protocol-imports-nothing-of-ours',
      comment: 'protocol/ is the contract everyone depends on; it depends on nothing of ours.',
      severity: 'error',
      from: { path: '^protocol/(src|scripts)/' },
      to: { path: OURS, pathNot: '^protocol/' },
    },
    {
      name: 'sandbox-contract-only-protocol',
      comment: 'sandbox-contract/ (types shared by envs and the drivers) may use protocol/ and nothing else of ours.',
      severity: 'error',
      from: { path: '^sandbox-contract/' },
      to: { path: OURS, pathNot: '^(sandbox-contract|protocol)/' },
    },
    {
      name: 'clients-ts-only-protocol',
      comment: 'The TypeScript client depends on protocol/ only (it must bundle for the browser without the server).',
      severity: 'error',
      from: { path: '^clients/ts/src/' },
      to: { path: OURS, pathNot: '^(clients/ts|protocol)/' },
    },
    {
      name: 'envs-only-protocol-and-sandbox-contract',
      comment:
        'envs/ depends on protocol/ and the sandbox contract only. What envs code needs from the server (e.g. a sandbox ' +
        'provider for `sandgym tasks validate`) is injected by the server (server/src/cli), never imported.',
      severity: 'error',
      from: { path: '^envs/src/' },
      to: { path: OURS, pathNot: '^(envs|protocol|sandbox-contract)/' },
    },
    {
      name: 'sandbox-drivers-know-no-envs-or-sessions',
      comment:
        'server/src/sandbox/ (drivers, channel, pools) knows nothing of envs, sessions, sockets or config: it may use ' +
        'itself, the sandbox contract and protocol/. server/src/sandbox-adapter.ts is the one seam that knows both sides.',
      severity: 'error',
      from: { path: '^server/src/sandbox/' },
      to: { path: OURS, pathNot: '^(server/src/sandbox|sandbox-contract|protocol)/' },
    },
    {
      name: 'scheduler-core-is-sans-io',
      comment:
        'server/src/scheduler/ is a pure core (time comes in as an argument, decisions go out): it knows no sandbox, ' +
        'session, socket or env, and may use only itself and protocol/ (docs/SCHEDULING.md).',
      severity: 'error',
      from: { path: '^server/src/scheduler/' },
      to: { path: OURS, pathNot: '^(server/src/scheduler|protocol)/' },
    },
    {
      name: 'product-code-imports-no-tests',
      comment: 'Product code never imports test helpers, fixtures under test/ or benchmarks.',
      severity: 'error',
      from: { path: PRODUCT },
      to: { path: ['(^|/)test/', '^bench/'] },
    },
    {
      name: 'no-unlisted-package',
      comment:
        'Product code uses only npm packages listed in package.json dependencies (not dev-only ones, not transitive ones), ' +
        'or an optional peer (tsx, esbuild: needed only to run from the TypeScript sources or to load a .ts --env-module; ' +
        '@stryker-mutator/instrumenter: only for the JS mutants of tasks validate --mutants; ' +
        'imported lazily on that path; also devDependencies so the repo has them).',
      severity: 'error',
      from: { path: PRODUCT },
      to: { dependencyTypes: ['npm-dev', 'npm-no-pkg', 'npm-unknown'], dependencyTypesNot: ['npm-peer'] },
    },
    {
      name: 'no-unresolvable-import',
      comment: 'An import (static or literal import()) that resolves to nothing would slip past every rule above.',
      severity: 'error',
      from: { path: PRODUCT },
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: ['^clients/ts/dist/', '^(server|envs|protocol|sandbox-contract)/dist/', '^envs/tasks/', '^clients/python/'] },
    // Type-only imports are dependencies of the design too (a type from server/ in envs/ couples them).
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      extensions: ['.ts', '.mts', '.js', '.mjs', '.cjs', '.json'],
      // Resolve packages' "exports" as Node and TypeScript do (e.g. tsx/esm/api).
      conditionNames: ['import', 'require', 'node', 'default'], exportsFields: ['exports'],
    },
  },
};
