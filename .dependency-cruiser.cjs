// The dependency direction of docs/ARCHITECTURE.md, checked by `npm run depcheck` (part of `npm test`).
// Every import counts: static, type-only (tsPreCompilationDeps), re-exports and import() with a literal
// specifier. import() of a specifier held in a variable is invisible here; scripts/dynamic-imports.ts
// (also run by depcheck) refuses those in product code outside a short allow-list.
/** Anything of ours (product, tests, benchmarks, scripts). */
const OURS = '^(protocol|sandbox-contract|envs|server|clients|bench|test|scripts|bin)/';
/** Product code: what ships (not tests, benchmarks or build scripts such as protocol/scripts). */
const PRODUCT = '^(protocol/src|sandbox-contract|envs/src|server/src|clients/ts/src|bin)/';
/** server/src folders (and loose files), as alternatives of a path pattern. */
const S = (...names) => `^server/src/(${names.join('|')})`;
/** The front of the server: the command line, the interactive player, the inspector, the composition root. */
const FRONT = ['cli/', 'play/', 'inspect/', 'trajectory/', 'app\\.ts', 'index\\.ts', 'http-routes\\.ts'];

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
        'itself, the sandbox contract and protocol/. server/src/env-host/sandbox-adapter.ts is the one seam that knows both sides.',
      severity: 'error',
      from: { path: '^server/src/sandbox/' },
      to: { path: OURS, pathNot: '^(server/src/sandbox|sandbox-contract|protocol)/' },
    },
    {
      name: 'scheduler-core-is-sans-io',
      comment:
        'server/src/admission/scheduler/ is a pure core (time comes in as an argument, decisions go out): it knows no sandbox, ' +
        'session, socket or env, and may use only itself and protocol/ (docs/SCHEDULING.md).',
      severity: 'error',
      from: { path: '^server/src/admission/scheduler/' },
      to: { path: OURS, pathNot: '^(server/src/admission/scheduler|protocol)/' },
    },
    // ---- server/src folder directions (docs/ARCHITECTURE.md "The layout"): from the front (cli, play,
    // inspect, app) down through connection/, server-core.ts, session/, to admission/, env-host/,
    // observability/, transport/ and sandbox/. Each rule names what a folder may NOT reach (up or sideways).
    {
      name: 'connection-knows-no-front',
      comment:
        'connection/ (one WebSocket connection: dispatch, handshake, opener, resume link) serves app.ts; it never reaches the CLI, player, inspector or app.',
      severity: 'error',
      from: { path: S('connection/') },
      to: { path: S(...FRONT) },
    },
    {
      name: 'core-knows-no-connection',
      comment:
        'server-core.ts knows connections only as its ConnectionHandle interface: connection/ depends on the core, never the other way (the old connection ⇄ server-core ⇄ session circle).',
      severity: 'error',
      from: { path: S('server-core\\.ts') },
      to: { path: S('connection/', ...FRONT) },
    },
    {
      name: 'session-knows-no-connection',
      comment:
        'session/ (a session, its queue, deadlines) is driven by connections and knows none of them, nor the server core (Session.open takes a SessionHost).',
      severity: 'error',
      from: { path: S('session/') },
      to: { path: S('connection/', 'transport/', 'server-core\\.ts', ...FRONT) },
    },
    {
      name: 'admission-below-sessions',
      comment:
        "admission/ (capacity ledger, scheduler driver and core, a session's admission) knows no session object, connection, env host, observer or front; of session/ it uses only the deadlines.",
      severity: 'error',
      from: { path: S('admission/') },
      to: { path: S('connection/', 'transport/', 'env-host/', 'observability/', 'session/session\\.ts', 'server-core\\.ts', ...FRONT) },
    },
    {
      name: 'env-host-below-sessions',
      comment: 'env-host/ (the registry build and the sandbox adapter, the seam between envs and the drivers) knows no session, connection, observer or front.',
      severity: 'error',
      from: { path: S('env-host/') },
      to: { path: S('connection/', 'transport/', 'session/session\\.ts', 'observability/', 'server-core\\.ts', ...FRONT) },
    },
    {
      name: 'transport-knows-only-bytes',
      comment: 'transport/ (socket, writes, byte budgets, tokens, replay log) moves bytes: of the server it uses only itself and config.',
      severity: 'error',
      from: { path: S('transport/') },
      to: { path: '^server/src/', pathNot: S('transport/', 'config\\.ts') },
    },
    {
      name: 'observability-only-listens',
      comment:
        'observability/ hears episodes through EpisodeObservers and reads /metrics sources through interfaces: it reaches no connection, session, admission or front module.',
      severity: 'error',
      from: { path: S('observability/') },
      to: { path: S('connection/', 'transport/', 'session/', 'admission/', 'cli/', 'play/', 'inspect/', 'trajectory/') },
    },
    {
      name: 'nothing-imports-the-cli',
      comment: 'cli/ is the top: the player, the inspector and the server never import it (what the player needs of the CLI is in cli/ itself: cli/play.ts).',
      severity: 'error',
      from: { path: '^server/src/', pathNot: S('cli/') },
      to: { path: S('cli/') },
    },
    {
      name: 'trajectory-is-neutral',
      comment: 'trajectory/ (the trajectory format and replay semantics) is shared by cli/, play/ and inspect/ and imports none of them.',
      severity: 'error',
      from: { path: S('trajectory/') },
      to: { path: S('cli/', 'play/', 'inspect/') },
    },
    {
      name: 'no-circular',
      comment:
        'No module reaches itself through its imports, runtime or type-only (tsPreCompilationDeps). Exempt until the rewards issue ' +
        '(issue 30, which owns envs/src/code) breaks it: the mutation mutants ⇄ languages circle.',
      severity: 'error',
      from: { pathNot: '^envs/src/code/mutation/' },
      to: { circular: true },
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
      conditionNames: ['import', 'require', 'node', 'default'],
      exportsFields: ['exports'],
    },
  },
};
