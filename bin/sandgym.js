#!/usr/bin/env node
// The CLI is TypeScript run through tsx's loader: no build step, no stale dist.
import { register } from 'tsx/esm/api';

register();
await import('../server/src/cli/main.ts');
