// Preloaded into the server under soak (`node --import bench/lib/soak-probe.mjs bin/sandgym.js serve`):
// every SANDGYM_SOAK_PROBE_MS (default 10 s) appends one JSON line with the process's own memory and
// handle counts to $SANDGYM_SOAK_PROBE. The server has no metrics endpoint for these, and only the
// process itself can see its heap and libuv handles; the timer is unref'd so it never keeps it alive.
import { appendFile } from 'node:fs/promises';

const file = process.env.SANDGYM_SOAK_PROBE;
if (file) {
  const every = Number(process.env.SANDGYM_SOAK_PROBE_MS ?? 10_000);
  const sample = () => {
    const m = process.memoryUsage();
    const resources = process.getActiveResourcesInfo();
    const line = {
      t: Date.now(),
      rss: m.rss,
      heap_used: m.heapUsed,
      heap_total: m.heapTotal,
      external: m.external,
      array_buffers: m.arrayBuffers,
      handles: resources.length,
      sockets: resources.filter((r) => r === 'TCPSocketWrap' || r === 'PipeWrap').length,
      timers: resources.filter((r) => r === 'Timeout').length,
    };
    appendFile(file, `${JSON.stringify(line)}\n`).catch(() => undefined);
  };
  sample();
  setInterval(sample, every).unref();
}
