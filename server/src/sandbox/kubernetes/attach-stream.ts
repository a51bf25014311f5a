// One attach connection to a pod's container over the Kubernetes streaming WebSocket subprotocols
// (v5.channel.k8s.io preferred, v4 accepted), as a pair of byte streams for the command channel: every
// message is one channel byte (0 stdin, 1 stdout, 2 stderr, 3 status, 255 close) plus payload. It
// stays open for the sandbox's life, so a command costs no API call.
import { PassThrough, Writable } from 'node:stream';
import type { KubeConfig } from '@kubernetes/client-node';
import WebSocket from 'ws';

const STDIN = 0;
const STDOUT = 1;
const STDERR = 2;
const STATUS = 3;
const CLOSE = 255;

export interface AttachStream {
  /** Bytes to the container's stdin. end() closes stdin (v5) or the connection (v4). */
  input: Writable;
  /** The container's stdout; ends when the connection or the stream closes. */
  output: PassThrough;
  stderr: PassThrough;
  /** The negotiated subprotocol. */
  protocol: string;
  /** The status the server sent on channel 3 (why the stream ended), if any. */
  status(): string | null;
  close(): void;
}

const PROTOCOLS = ['v5.channel.k8s.io', 'v4.channel.k8s.io'];

export async function openAttach(kc: KubeConfig, namespace: string, pod: string, container: string): Promise<AttachStream> {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('kubernetes: no cluster configured');
  const q = new URLSearchParams({ container, stdin: 'true', stdout: 'true', stderr: 'true', tty: 'false' });
  const url = `${cluster.server.replace(/^http/, 'ws')}/api/v1/namespaces/${encodeURIComponent(namespace)}/pods/${encodeURIComponent(pod)}/attach?${q.toString()}`;
  const opts: WebSocket.ClientOptions = { perMessageDeflate: false };
  // TLS material and credentials of the kubeconfig (client certificate, bearer token).
  await kc.applyToHTTPSOptions(opts);
  const ws = new WebSocket(url, PROTOCOLS, opts);
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
    ws.once('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString('utf8')));
      res.on('end', () => reject(new Error(`attach to ${pod} refused: HTTP ${res.statusCode ?? '?'} ${body.slice(0, 300)}`)));
    });
  });
  const output = new PassThrough();
  const stderr = new PassThrough();
  let statusText: string | null = null;
  const protocol = ws.protocol;
  const finish = () => {
    output.end();
    stderr.end();
  };
  ws.on('message', (data: Buffer, isBinary: boolean) => {
    const buf = isBinary ? data : Buffer.from(data);
    if (buf.length < 1) return;
    const ch = buf[0];
    const payload = buf.subarray(1);
    if (ch === STDOUT) output.write(payload);
    else if (ch === STDERR) stderr.write(payload);
    else if (ch === STATUS) statusText = payload.toString('utf8').slice(0, 2000);
    else if (ch === CLOSE && payload[0] === STDOUT) output.end();
  });
  ws.on('close', finish);
  ws.on('error', (e: Error) => {
    output.destroy(e);
    stderr.end();
  });
  const input = new Writable({
    write(chunk: Buffer, _enc, cb) {
      if (ws.readyState !== WebSocket.OPEN) {
        cb(new Error('attach stream closed'));
        return;
      }
      const frame = Buffer.allocUnsafe(chunk.length + 1);
      frame[0] = STDIN;
      chunk.copy(frame, 1);
      ws.send(frame, (e) => cb(e ?? null));
    },
    final(cb) {
      // v5 can close stdin alone (the agent sees EOF); v4 can only close the whole connection.
      if (ws.readyState === WebSocket.OPEN && protocol === 'v5.channel.k8s.io') ws.send(Buffer.from([CLOSE, STDIN]), () => cb());
      else {
        ws.close();
        cb();
      }
    },
  });
  return {
    input,
    output,
    stderr,
    protocol,
    status: () => statusText,
    close: () => {
      if (ws.readyState === WebSocket.OPEN) ws.close();
      else ws.terminate();
      finish();
    },
  };
}
