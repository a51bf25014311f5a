// A TCP proxy a test can cut: every connection through it is destroyed at once (the client sees a
// drop without a close frame, as on a network failure), and while blocked it refuses new ones.
import net from 'node:net';

export class TcpProxy {
  private readonly sockets = new Set<net.Socket>();
  /** While true, new connections are closed as soon as they arrive (the server "is not reachable"). */
  blocked = false;
  /** Connections accepted (not refused) so far. */
  accepted = 0;

  private constructor(
    private readonly server: net.Server,
    readonly port: number,
  ) {}

  static async start(targetPort: number): Promise<TcpProxy> {
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const proxy = new TcpProxy(server, (server.address() as net.AddressInfo).port);
    server.on('connection', (client) => proxy.accept(client, targetPort));
    return proxy;
  }

  private accept(client: net.Socket, targetPort: number): void {
    if (this.blocked) {
      client.resetAndDestroy();
      return;
    }
    this.accepted++;
    const upstream = net.connect(targetPort, '127.0.0.1');
    for (const s of [client, upstream]) {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
      s.on('error', () => undefined);
    }
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    client.pipe(upstream);
    upstream.pipe(client);
  }

  /** ws:// URL through the proxy for a server URL. */
  url(serverUrl: string): string {
    const u = new URL(serverUrl);
    u.port = String(this.port);
    return u.toString();
  }

  /** Destroys every connection through the proxy (RST both ways). */
  cut(): void {
    for (const s of [...this.sockets]) s.resetAndDestroy();
  }

  async close(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
