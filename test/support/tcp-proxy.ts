import net from 'node:net';

/**
 * A TCP proxy the test controls, standing between the app and a shared service (Redis,
 * PostgreSQL) so an outage can be simulated without touching the service itself.
 *
 * - `blackhole()`: connections stay open but nothing passes (a network partition); bytes are
 *   held and delivered on `restore()`, as TCP retransmission would.
 * - `cut()`: every connection is reset and new ones are refused (the service is down).
 */
export class TcpProxy {
  private server = net.createServer((client) => this.accept(client));
  private readonly pairs = new Set<{ client: net.Socket; upstream: net.Socket }>();
  private mode: 'open' | 'blackhole' | 'cut' = 'open';

  private constructor(private readonly target: { host: string; port: number }) {}

  static async start(target: { host: string; port: number }): Promise<TcpProxy> {
    const proxy = new TcpProxy(target);
    await new Promise<void>((resolve) => proxy.server.listen(0, '127.0.0.1', resolve));
    return proxy;
  }

  get port(): number {
    return (this.server.address() as net.AddressInfo).port;
  }

  blackhole(): void {
    this.mode = 'blackhole';
    for (const { client, upstream } of this.pairs) {
      client.unpipe(upstream);
      upstream.unpipe(client);
    }
  }

  cut(): void {
    this.mode = 'cut';
    for (const { client, upstream } of this.pairs) {
      client.resetAndDestroy();
      upstream.destroy();
    }
    this.pairs.clear();
  }

  restore(): void {
    if (this.mode === 'blackhole') {
      for (const { client, upstream } of this.pairs) {
        client.pipe(upstream);
        upstream.pipe(client);
      }
    }
    this.mode = 'open';
  }

  async close(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(client: net.Socket): void {
    if (this.mode === 'cut') {
      client.resetAndDestroy();
      return;
    }
    const upstream = net.connect(this.target);
    const pair = { client, upstream };
    this.pairs.add(pair);
    if (this.mode === 'open') {
      client.pipe(upstream);
      upstream.pipe(client);
    }
    const drop = () => {
      this.pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
  }
}
