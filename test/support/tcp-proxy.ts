import net from 'node:net';

export type ProxyState = 'forwarding' | 'refusing' | 'black-hole';

export interface TcpProxy {
  port: number;
  /**
   * `refusing`: open connections are cut and new ones closed at once (a database that went away);
   * `black-hole`: new connections are accepted and never answered (a network that drops packets).
   */
  set(state: ProxyState): void;
  close(): Promise<void>;
}

/** A TCP proxy on a free local port in front of `target`, so a test can cut a dependency without touching it. */
export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  let state: ProxyState = 'forwarding';
  const open = new Set<net.Socket>();
  const track = (socket: net.Socket) => {
    open.add(socket);
    socket.once('close', () => open.delete(socket));
    socket.on('error', () => {});
  };
  const server = net.createServer((client) => {
    track(client);
    if (state === 'refusing') return void client.destroy();
    if (state === 'black-hole') return;
    const upstream = net.connect(target);
    track(upstream);
    client.pipe(upstream).pipe(client);
    client.once('close', () => upstream.destroy());
    upstream.once('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    set(next) {
      state = next;
      if (next !== 'forwarding') for (const socket of open) socket.destroy();
    },
    async close() {
      for (const socket of open) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
