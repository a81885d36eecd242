import type { AddressInfo } from 'node:net';
import type http from 'node:http';
import WebSocket from 'ws';

export interface Closed {
  code: number;
  reason: string;
  at: number;
}

/** A raw graphql-ws (graphql-transport-ws) client, so tests see every message and close code as sent. */
export class LiveTestClient {
  readonly messages: any[] = [];
  readonly closed: Promise<Closed>;
  private readonly waiters = new Set<() => void>();

  private constructor(readonly socket: WebSocket) {
    socket.on('message', (data) => {
      this.messages.push(JSON.parse(String(data)));
      for (const wake of [...this.waiters]) wake();
    });
    this.closed = new Promise((resolve) => socket.once('close', (code, reason) => resolve({ code, reason: String(reason), at: Date.now() })));
    socket.on('error', () => {});
  }

  static url(server: http.Server): string {
    return `ws://127.0.0.1:${(server.address() as AddressInfo).port}/graphql`;
  }

  /** Opens the socket and sends `connection_init` with `authorization` (if given); does not wait for the answer. */
  static async open(server: http.Server, authorization?: string): Promise<LiveTestClient> {
    const socket = new WebSocket(LiveTestClient.url(server), 'graphql-transport-ws');
    await new Promise<void>((resolve, reject) => {
      socket.once('open', () => resolve());
      socket.once('error', reject);
    });
    const client = new LiveTestClient(socket);
    socket.send(JSON.stringify({ type: 'connection_init', payload: authorization === undefined ? {} : { authorization } }));
    return client;
  }

  /** Opens, and waits for `connection_ack` (throws with the close code if refused). */
  static async connect(server: http.Server, authorization: string): Promise<LiveTestClient> {
    const client = await LiveTestClient.open(server, authorization);
    const outcome = await Promise.race([client.waitFor((message) => message.type === 'connection_ack'), client.closed]);
    if ('code' in outcome) throw new Error(`connection refused: ${outcome.code} ${outcome.reason}`);
    return client;
  }

  subscribe(id: string, query: string, variables?: Record<string, unknown>): void {
    this.socket.send(JSON.stringify({ id, type: 'subscribe', payload: { query, variables } }));
  }

  complete(id: string): void {
    this.socket.send(JSON.stringify({ id, type: 'complete' }));
  }

  /** The first message (from the start) matching `match`, waiting up to `timeoutMs`. */
  waitFor(match: (message: any) => boolean, timeoutMs = 3_000): Promise<any> {
    const found = this.messages.find(match);
    if (found) return Promise.resolve(found);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters.delete(check);
        reject(new Error(`no matching message within ${timeoutMs} ms; got ${JSON.stringify(this.messages).slice(0, 500)}`));
      }, timeoutMs);
      const check = () => {
        const message = this.messages.find(match);
        if (!message) return;
        clearTimeout(timer);
        this.waiters.delete(check);
        resolve(message);
      };
      this.waiters.add(check);
    });
  }

  /** Messages for subscription `id` of type `next`. */
  events(id: string): any[] {
    return this.messages.filter((message) => message.id === id && message.type === 'next');
  }

  close(): void {
    this.socket.terminate();
  }
}

export function authorizationOf(credential: { token: string } | { bearer: string }): string {
  return 'token' in credential ? `Token token=${credential.token}` : `Bearer ${credential.bearer}`;
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
