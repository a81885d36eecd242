import { lookup as dnsLookup } from 'node:dns/promises';
import http from 'node:http';
import https from 'node:https';
import { BlockList, isIP, type LookupFunction } from 'node:net';

/** A resolver of host names to every address they have (injectable, so tests can name what a host resolves to). */
export type ResolveHost = (hostname: string) => Promise<Array<{ address: string; family: number }>>;

export interface OutboundOptions {
  /** In production nothing but public addresses over https; elsewhere also http to loopback. */
  production: boolean;
  resolve?: ResolveHost;
  timeoutMs?: number;
  maxBytes?: number;
}

const DEFAULT_TIMEOUT_MS = 10_000;
const DEFAULT_MAX_BYTES = 256 * 1024;
const LOOPBACK_NAMES = new Set(['localhost', '127.0.0.1', '[::1]', '::1']);

/**
 * Addresses the server must never be made to call on someone's say-so in production (SSRF): this
 * network and loopback, private ranges (RFC 1918, unique local), carrier-grade NAT, link-local
 * (where cloud metadata services answer, 169.254.169.254), multicast and reserved.
 */
const FORBIDDEN = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) FORBIDDEN.addSubnet(network, prefix, 'ipv4');
for (const [network, prefix] of [['::', 128], ['::1', 128], ['fc00::', 7], ['fe80::', 10], ['ff00::', 8], ['64:ff9b::', 96]] as const) FORBIDDEN.addSubnet(network, prefix, 'ipv6');

/** True for an address the server may not call in production (IPv4-mapped IPv6 judged as its IPv4). */
export function isForbiddenAddress(address: string): boolean {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
  if (mapped) return FORBIDDEN.check(mapped, 'ipv4');
  const family = isIP(address);
  if (family === 0) return true;
  return FORBIDDEN.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

/**
 * A call the guard refused, and why; the caller words it for its own input. `destination`: refused
 * for where it would go (scheme, host, address), before anything was sent; else the answer was
 * cut (too slow, too large).
 */
export class OutboundRefusal extends Error {
  constructor(message: string, readonly destination = true) {
    super(message);
  }
}

const resolveWithDns: ResolveHost = (hostname) => dnsLookup(hostname, { all: true, verbatim: true });

/**
 * Where a call to `raw` may go: https only (http only to loopback, outside production), no
 * credentials in the URL; the host resolved once and, in production, every address it resolves
 * to outside the forbidden ranges. The connection then goes to the address checked here.
 */
export async function checkedDestination(raw: string | URL, options: OutboundOptions): Promise<{ url: URL; pinned: { address: string; family: number } }> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new OutboundRefusal('not an absolute URL');
  }
  if (url.username || url.password) throw new OutboundRefusal('credentials in the URL');
  const loopbackName = LOOPBACK_NAMES.has(url.hostname);
  if (url.protocol === 'http:') {
    if (options.production || !loopbackName) throw new OutboundRefusal(`${url.host} is called over https only`);
  } else if (url.protocol !== 'https:') {
    throw new OutboundRefusal(`${url.protocol} is not https`);
  }
  const host = url.hostname.replace(/^\[|\]$/g, '');
  let addresses: Array<{ address: string; family: number }>;
  try {
    addresses = isIP(host) ? [{ address: host, family: isIP(host) }] : await (options.resolve ?? resolveWithDns)(host);
  } catch {
    throw new OutboundRefusal(`its host ${host} does not resolve`);
  }
  if (addresses.length === 0) throw new OutboundRefusal(`its host ${host} does not resolve`);
  if (options.production && addresses.some((entry) => isForbiddenAddress(entry.address))) {
    throw new OutboundRefusal(`its host ${host} is a private, loopback or link-local address`);
  }
  return { url, pinned: addresses[0]! };
}

/**
 * The one way the server calls a URL it was given (an identity provider's discovery document, its
 * token and key endpoints): `checkedDestination` first, then one request to the checked address
 * (TLS still verifies the host name), no redirects followed, bounded in time and size. Answers a
 * Fetch API `Response`, so libraries that take a `fetch` (openid-client's `customFetch`) use it too.
 */
export async function guardedFetch(raw: string | URL, init: { method?: string; headers?: HeadersInit; body?: string | URLSearchParams | Uint8Array | ArrayBuffer | ReadableStream | null } | undefined, options: OutboundOptions): Promise<Response> {
  const { url, pinned } = await checkedDestination(raw, options);
  const lookup: LookupFunction = (_hostname, lookupOptions, callback) => {
    if ((lookupOptions as { all?: boolean }).all) (callback as unknown as (error: null, addresses: Array<{ address: string; family: number }>) => void)(null, [pinned]);
    else callback(null, pinned.address, pinned.family);
  };
  const headers: Record<string, string> = {};
  new Headers(init?.headers ?? {}).forEach((value, name) => {
    headers[name] = value;
  });
  if (init?.body instanceof ReadableStream) throw new OutboundRefusal('a streamed request body is not sent');
  const body = init?.body == null ? undefined : typeof init.body === 'string' || init.body instanceof URLSearchParams ? String(init.body) : Buffer.from(init.body as ArrayBuffer);
  const transport = url.protocol === 'https:' ? https : http;
  const maxBytes = options.maxBytes ?? DEFAULT_MAX_BYTES;
  return new Promise<Response>((resolve, reject) => {
    const request = transport.request(url, { method: init?.method ?? 'GET', lookup, timeout: options.timeoutMs ?? DEFAULT_TIMEOUT_MS, headers }, (response) => {
      const chunks: Buffer[] = [];
      let size = 0;
      response.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > maxBytes) {
          request.destroy(new OutboundRefusal(`the answer is larger than ${maxBytes} bytes`, false));
          return;
        }
        chunks.push(chunk);
      });
      response.on('end', () => {
        const answerHeaders = new Headers();
        for (const [name, value] of Object.entries(response.headers)) if (value !== undefined) answerHeaders.set(name, Array.isArray(value) ? value.join(', ') : value);
        const status = response.statusCode ?? 502;
        resolve(new Response(status === 204 || status === 304 ? null : Buffer.concat(chunks), { status, headers: answerHeaders }));
      });
      response.on('error', reject);
    });
    request.on('timeout', () => request.destroy(new OutboundRefusal('timed out', false)));
    request.on('error', reject);
    request.end(body);
  });
}
