#!/usr/bin/env node
// Summarises a V8 .cpuprofile (from `node --cpu-prof`, e.g. BENCH_CPU_PROF=dir on the ws-overhead bench)
// as self and inclusive time per function+file, over steady-state samples only: idle samples and
// samples under module evaluation / schema compilation (startup) are dropped.
// Usage: node bench/lib/cpu-profile-summary.mjs <file.cpuprofile> [topN]
import { readFileSync } from 'node:fs';
const p = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const byId = new Map(p.nodes.map((n) => [n.id, n]));
const parent = new Map();
for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const key = (n) => `${n.callFrame.functionName || '(anon)'} ${n.callFrame.url.replace(/^file:\/\/.*?\/(server|protocol|envs|clients|node_modules)\//, '$1/')}`;
const stackOf = (id) => {
  const s = [];
  let cur = id;
  while (cur !== undefined) {
    s.push(byId.get(cur));
    cur = parent.get(cur);
  }
  return s;
};
const self = new Map(),
  incl = new Map();
let busy = 0;
p.samples.forEach((id, i) => {
  const t = p.timeDeltas[i] ?? 0;
  const st = stackOf(id);
  const names = st.map(key);
  if (
    names[0].startsWith('(idle)') ||
    names.some((k) => k.startsWith('evaluate ') || k.includes('module_job') || k.includes('compileSchema') || k.includes('(program)'))
  )
    return;
  busy += t;
  self.set(names[0], (self.get(names[0]) ?? 0) + t);
  for (const k of new Set(names)) incl.set(k, (incl.get(k) ?? 0) + t);
});
const N = Number(process.argv[3] ?? 40);
const top = (m, k) =>
  [...m]
    .sort((a, b) => b[1] - a[1])
    .slice(0, k)
    .map(([k2, t]) => `${((100 * t) / busy).toFixed(1).padStart(5)}%  ${k2}`)
    .join('\n');
console.log('busy ms', (busy / 1000).toFixed(0));
console.log('--- self');
console.log(top(self, N));
console.log('--- inclusive');
console.log(top(incl, N));
