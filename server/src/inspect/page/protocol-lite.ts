// What the browser bundle uses in place of protocol/src/index.ts: the codec and the error registry.
// The full index also loads the ajv validators, which compile JavaScript at load time (new Function)
// and so cannot run under the inspector's Content-Security-Policy (no 'unsafe-eval'); the client
// needs none of them. plugin.ts redirects the client's protocol import here when bundling.
export * from '#protocol/codec.js';
export * from '#protocol/errors.js';
