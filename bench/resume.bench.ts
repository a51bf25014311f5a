// Session resume (PROTOCOL.md §5a): how long the TS client takes from a cut TCP connection to the next
// step answered on the resumed session, against the baseline of what a client without resume does
// after a drop (a fresh connect + hello + make + reset, episode lost). Same server, same run. Also what
// offering resume costs per step (the server's replay books on the reply path): pipelined steps on a
// server with resume_grace_ms 60000 against one with 0, in interleaved rounds.
// Run: npx tsx bench/resume.bench.ts [iterations]
import net from 'node:net';
import pino from 'pino';
import { connect, type SandgymClient } from '../clients/ts/src/index.js';
import { wsPath } from '../protocol/src/index.js';
import { buildApp } from '../server/src/app.js';

const N = Number(process.argv[2] ?? 40);

/** A TCP proxy whose connections can be cut (RST both ways). */
async function proxyTo(port: number): Promise<{ port: number; cut: () => void; close: () => Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const up = net.connect(port, '127.0.0.1');
    for (const s of [client, up]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => undefined);
    }
    client.on('close', () => up.destroy());
    up.on('close', () => client.destroy());
    client.pipe(up);
    up.pipe(client);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as net.AddressInfo).port,
    cut: () => {
      for (const s of [...sockets]) s.resetAndDestroy();
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] as number;
}

const quiet = { info: () => undefined, warn: () => undefined };

async function main(): Promise<void> {
  const built = await buildApp({ fixtures: true, port: 0, resume_grace_ms: 60_000 }, { logger: pino({ level: 'silent' }) });
  await built.app.listen({ port: 0, host: '127.0.0.1' });
  const port = (built.app.server.address() as net.AddressInfo).port;
  const proxy = await proxyTo(port);
  const viaProxy = `ws://127.0.0.1:${proxy.port}${wsPath()}`;
  const direct = `ws://127.0.0.1:${port}${wsPath()}`;

  // Baseline: a fresh connection, a new session and its reset (what a drop costs without resume).
  const fresh: number[] = [];
  for (let i = 0; i < N; i++) {
    const t0 = performance.now();
    const c = await connect(direct, { logger: quiet });
    const env = await c.make<number, number>('test/counter-v0');
    await env.reset();
    fresh.push(performance.now() - t0);
    await c.close();
  }

  // Resume: cut, and time until a step on the same session is answered.
  const resumed: number[] = [];
  const client: SandgymClient = await connect(viaProxy, { logger: quiet });
  const env = await client.make<number, number>('test/counter-v0');
  await env.reset();
  for (let i = 0; i < N; i++) {
    // counter-v0 truncates at 10 steps: a reset now and then, outside the timing.
    if (i % 5 === 4) await env.reset();
    const t0 = performance.now();
    proxy.cut();
    const r = await env.step(0);
    resumed.push(performance.now() - t0);
    if (r.observation !== 0) throw new Error('episode state changed across the resume');
  }
  await client.close();
  await proxy.close();

  // Per-step cost of offering resume: 2000 steps, 64 in flight, rounds interleaved with a resume-off server.
  const off = await buildApp({ fixtures: true, port: 0, resume_grace_ms: 0 }, { logger: pino({ level: 'silent' }) });
  await off.app.listen({ port: 0, host: '127.0.0.1' });
  const offUrl = `ws://127.0.0.1:${(off.app.server.address() as net.AddressInfo).port}${wsPath()}`;
  const perStep: Record<'on' | 'off', number[]> = { on: [], off: [] };
  for (let round = 0; round < 8; round++) {
    for (const [name, url] of [
      ['off', offUrl],
      ['on', direct],
    ] as const) {
      const c = await connect(url, { logger: quiet });
      const e = await c.make<number, number>('test/noop-v0');
      await e.reset();
      const n = 2000;
      let sent = 0;
      const t0 = performance.now();
      await Promise.all(
        Array.from({ length: 64 }, async () => {
          while (sent < n) {
            sent++;
            await e.step(0);
          }
        }),
      );
      perStep[name].push(((performance.now() - t0) * 1000) / n);
      await c.close();
    }
  }
  await off.app.close();
  await built.app.close();

  const p50r = pct(resumed, 50);
  const p50f = pct(fresh, 50);
  console.log(`resume.bench: ${N} iterations (TS client, in-process server, TCP proxy cut)`);
  console.log(`  cut -> step answered on the resumed session: p50 ${p50r.toFixed(1)} ms, p95 ${pct(resumed, 95).toFixed(1)} ms`);
  console.log(`  baseline connect + hello + make + reset:      p50 ${p50f.toFixed(1)} ms, p95 ${pct(fresh, 95).toFixed(1)} ms`);
  console.log(`  ratio resume / fresh start (p50): ${(p50r / p50f).toFixed(2)}`);
  const on = pct(perStep.on, 50);
  const offMed = pct(perStep.off, 50);
  console.log(`  pipelined step, resume offered: median ${on.toFixed(1)} µs/step; resume off: ${offMed.toFixed(1)} µs/step; ratio ${(on / offMed).toFixed(3)}`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
