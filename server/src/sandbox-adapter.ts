// Moved to env-host/sandbox-adapter.ts (issue 31). This re-export remains only so test/integrity (edited on
// another branch) keeps compiling until the lead points its imports at the new path; delete it then.
export * from './env-host/sandbox-adapter.js';
