import { lookup as dnsLookup } from 'node:dns/promises';
import http from 'node:http';
import https from 'node:https';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import { InvalidInputError } from '../errors/domain-errors.js';

/** A resolver of host names to every address they have (injectable, so tests can name what a host resolves to). */
export type ResolveHost = (hostname: string) => Promise<Array<{ address: string; family: number }>>;

export interface DiscoveryFetchOptions {
  /** In production nothing but public addresses over https; elsewhere also http on loopback. */
  production: boolean;
  resolve?: ResolveHost;
  timeoutMs?: number;
}

/** What this service needs of an issuer's discovery document to sign users in with it. */
export interface IssuerMetadata {
  issuer: string;
  authorization_endpoint: string;
  token_endpoint: string;
  jwks_uri: string;
}

const MAX_DOCUMENT_BYTES = 256 * 1024;
const LOOPBACK_NAMES = new Set(['localhost', '127.0.0.1', '[::1]', '::1']);

/**
 * Addresses the server must never be made to call on an administrator's say-so in production
 * (SSRF): this network and loopback, private ranges (RFC 1918, unique local), carrier-grade NAT,
 * link-local (where cloud metadata services answer, 169.254.169.254), multicast and reserved.
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

const resolveWithDns: ResolveHost = (hostname) => dnsLookup(hostname, { all: true, verbatim: true });

function refused(issuer: string, why: string): InvalidInputError {
  return new InvalidInputError(`the OIDC issuer ${issuer} cannot be used: ${why}`);
}

/**
 * Fetches `<issuer>/.well-known/openid-configuration` on the server's side, guarded against SSRF:
 * https only (http only to loopback, outside production); the host is resolved once, every address
 * it resolves to is checked, and the connection goes to the checked address (no second look-up a
 * rebinding DNS server could answer differently). No redirects, a size and a time bound. Anything
 * wrong is the administrator's input: BAD_USER_INPUT.
 */
export async function fetchIssuerMetadata(issuer: string, options: DiscoveryFetchOptions): Promise<IssuerMetadata> {
  let url: URL;
  try {
    url = new URL(`${issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`);
  } catch {
    throw refused(issuer, 'not an absolute URL');
  }
  const loopbackName = LOOPBACK_NAMES.has(url.hostname);
  if (url.username || url.password) throw refused(issuer, 'credentials in the URL');
  if (url.protocol === 'http:') {
    if (options.production || !loopbackName) throw refused(issuer, 'the discovery document is fetched over https only');
  } else if (url.protocol !== 'https:') {
    throw refused(issuer, 'the discovery document is fetched over https only');
  }
  const host = url.hostname.replace(/^\[|\]$/g, '');
  let addresses: Array<{ address: string; family: number }>;
  try {
    addresses = isIP(host) ? [{ address: host, family: isIP(host) }] : await (options.resolve ?? resolveWithDns)(host);
  } catch {
    throw refused(issuer, `its host ${host} does not resolve`);
  }
  if (addresses.length === 0) throw refused(issuer, `its host ${host} does not resolve`);
  if (options.production && addresses.some((entry) => isForbiddenAddress(entry.address))) {
    throw refused(issuer, 'its host is a private, loopback or link-local address');
  }
  const pinned = addresses[0]!;
  const body = await get(url, pinned, options.timeoutMs ?? 10_000).catch((error: unknown) => {
    throw error instanceof InvalidInputError ? error : refused(issuer, `its discovery document could not be fetched (${error instanceof Error ? error.message : 'error'})`);
  });
  let document: Partial<Record<keyof IssuerMetadata, unknown>>;
  try {
    document = JSON.parse(body) as typeof document;
  } catch {
    throw refused(issuer, 'its discovery document is not JSON');
  }
  const missing = (['issuer', 'authorization_endpoint', 'token_endpoint', 'jwks_uri'] as const).filter((name) => typeof document[name] !== 'string');
  if (missing.length) throw refused(issuer, `its discovery document lacks ${missing.join(', ')}`);
  // OpenID Connect Discovery 1.0, section 4.3: the document must name the issuer it was fetched for.
  if ((document.issuer as string).replace(/\/+$/, '') !== issuer.replace(/\/+$/, '')) {
    throw refused(issuer, `its discovery document names another issuer (${String(document.issuer)})`);
  }
  return document as IssuerMetadata;
}

/** One GET to the already checked address (TLS still verifies the host name), bounded in size and time. */
function get(url: URL, pinned: { address: string; family: number }, timeoutMs: number): Promise<string> {
  const lookup: LookupFunction = (_hostname, lookupOptions, callback) => {
    if ((lookupOptions as { all?: boolean }).all) (callback as unknown as (error: null, addresses: Array<{ address: string; family: number }>) => void)(null, [pinned]);
    else callback(null, pinned.address, pinned.family);
  };
  const transport = url.protocol === 'https:' ? https : http;
  return new Promise<string>((resolve, reject) => {
    const request = transport.get(url, { lookup, timeout: timeoutMs, headers: { accept: 'application/json' } }, (response) => {
      if (response.statusCode !== 200) {
        response.resume();
        reject(new Error(`HTTP ${response.statusCode ?? 'error'}`));
        return;
      }
      const chunks: Buffer[] = [];
      let size = 0;
      response.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > MAX_DOCUMENT_BYTES) {
          request.destroy(new Error('document too large'));
          return;
        }
        chunks.push(chunk);
      });
      response.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
      response.on('error', reject);
    });
    request.on('timeout', () => request.destroy(new Error('timed out')));
    request.on('error', reject);
  });
}
