// The floor for the overhead benchmark: a bare `ws` server that echoes every frame back unchanged,
// run in its own process exactly like the sandgym server, so both pay the same socket and framing cost.
import { WebSocketServer } from 'ws';

const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, perMessageDeflate: false, maxPayload: 64 * 1024 * 1024 });
wss.on('connection', (ws) => {
  ws.on('message', (data, isBinary) => ws.send(data, { binary: isBinary }));
});
wss.on('listening', () => {
  process.stdout.write(`echo listening on ws://127.0.0.1:${wss.address().port}/\n`);
});
process.on('SIGTERM', () => wss.close(() => process.exit(0)));
