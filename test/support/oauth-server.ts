import 'reflect-metadata';
import { afterAll, beforeAll } from '@jest/globals';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes, randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import * as client from 'openid-client';
import { createApp, type App, type AppSettings } from '../../src/app/create-app.js';
import { createRateLimiter, type RateLimiter } from '../../src/auth/rate-limit.js';
import type { Database } from '../../src/db/database.js';
import { openTestDatabase } from './database.js';
import { createLogger } from '../../src/logging/logger.js';
import { AppsService } from '../../src/oauth-server/apps.service.js';
import { setPassword } from '../../src/oauth-server/passwords.js';
import { sealersFor } from '../../src/oauth-server/provider.js';
import { TEST_SETTINGS } from './harness.js';
import { bootstrapAccount } from '../../src/accounts/bootstrap.js';
import { Account } from '../../src/accounts/account.entity.js';
import { AccountsService } from '../../src/accounts/accounts.service.js';
import { User } from '../../src/users/user.entity.js';

/** One server instance listening on an ephemeral port, so a real OAuth client can talk HTTP to it. */
export interface Instance {
  url: string;
  /** The server listening at `url` (what a WebSocket client connects to). */
  server: http.Server;
  app: App;
  rateLimiter: RateLimiter;
  /** The app's own server, listening too: where its WebSocket (live updates) is served. */
  liveServer: http.Server;
}

/**
 * N instances on one database and one server secret, all answering for the same issuer (the first
 * instance's URL), as instances behind one load balancer would.
 */
export async function startInstances(database: Database, count: number, logs: string[], settings: Partial<AppSettings> = {}): Promise<{ instances: Instance[]; serverSecret: Buffer; stop(): Promise<void> }> {
  const serverSecret = randomBytes(32);
  const sink = new Writable({ write(chunk, _encoding, done) { logs.push(String(chunk)); done(); } });
  const logger = createLogger({ logLevel: 'debug' }, sink);
  const servers: http.Server[] = [];
  for (let index = 0; index < count; index += 1) {
    const server = http.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    servers.push(server);
  }
  const issuer = `http://127.0.0.1:${(servers[0]!.address() as AddressInfo).port}`;
  const instances: Instance[] = [];
  for (const server of servers) {
    const rateLimiter = createRateLimiter({ perMinute: 1_000_000, logger });
    const app = await createApp({ settings: { ...TEST_SETTINGS, ...settings, publicApiUrl: issuer }, database, logger, serverSecret, rateLimiter });
    server.on('request', app.app);
    await new Promise<void>((resolve) => app.httpServer.listen(0, '127.0.0.1', resolve));
    // Live updates (WebSocket upgrades on /graphql) are served by the app's own server's upgrade handler.
    server.on('upgrade', (request, socket, head) => app.httpServer.emit('upgrade', request, socket, head));
    instances.push({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server, app, rateLimiter, liveServer: app.httpServer });
  }
  return {
    instances,
    serverSecret,
    async stop() {
      for (const [index, instance] of instances.entries()) {
        await instance.app.stop();
        await instance.rateLimiter.close();
        servers[index]!.closeAllConnections();
        await new Promise<void>((resolve) => servers[index]!.close(() => resolve()));
      }
    },
  };
}

/** A browser's cookie jar, enough for the sign-in pages: name, value and path. */
export class CookieJar {
  private readonly cookies = new Map<string, { name: string; value: string; path: string }>();

  store(response: Response): void {
    for (const header of response.headers.getSetCookie()) {
      const [pair, ...attributes] = header.split(';').map((part) => part.trim());
      const [name, ...rest] = pair!.split('=');
      const value = rest.join('=');
      const path = attributes.find((attribute) => /^path=/i.test(attribute))?.slice(5) ?? '/';
      const expired = attributes.some((attribute) => /^expires=/i.test(attribute) && Date.parse(attribute.slice(8)) < Date.now())
        || attributes.some((attribute) => /^max-age=0$/i.test(attribute));
      const key = `${name}|${path}`;
      if (expired || value === '') this.cookies.delete(key);
      else this.cookies.set(key, { name: name!, value, path });
    }
  }

  header(url: URL): string {
    return [...this.cookies.values()].filter((cookie) => url.pathname.startsWith(cookie.path)).map((cookie) => `${cookie.name}=${cookie.value}`).join('; ');
  }

  /** Every Set-Cookie seen must be HttpOnly and SameSite=Lax (checked by the tests on raw headers). */
  all(): string[] {
    return [...this.cookies.values()].map((cookie) => cookie.name);
  }
}

export type BrowseResult = { kind: 'page'; url: URL; status: number; html: string } | { kind: 'callback'; url: URL };

/** Follows redirects like a browser until a page is shown or the app's redirect URI is reached. */
export async function browse(jar: CookieJar, start: URL, redirectUri: string, init: { method?: string; form?: Record<string, string> } = {}, setCookies?: string[]): Promise<BrowseResult> {
  let url = start;
  let method = init.method ?? 'GET';
  let body: string | undefined = init.form ? new URLSearchParams(init.form).toString() : undefined;
  for (let hop = 0; hop < 10; hop += 1) {
    if (url.href.startsWith(redirectUri)) return { kind: 'callback', url };
    const headers: Record<string, string> = { cookie: jar.header(url) };
    if (body !== undefined) headers['content-type'] = 'application/x-www-form-urlencoded';
    const response = await fetch(url, { method, headers, body, redirect: 'manual' });
    setCookies?.push(...response.headers.getSetCookie());
    jar.store(response);
    const location = response.headers.get('location');
    if (response.status >= 300 && response.status < 400 && location) {
      url = new URL(location, url);
      method = 'GET';
      body = undefined;
      continue;
    }
    return { kind: 'page', url, status: response.status, html: await response.text() };
  }
  throw new Error('too many redirects');
}

/** A browser's next `GET /oauth/authorize` for the app: a silent code while its sign-in session lives, else a page. */
export async function authorizeAgain(jar: CookieJar, config: client.Configuration, redirectUri: string): Promise<BrowseResult> {
  return browse(jar, client.buildAuthorizationUrl(config, {
    redirect_uri: redirectUri,
    scope: 'openid users.read',
    code_challenge: await client.calculatePKCECodeChallenge(client.randomPKCECodeVerifier()),
    code_challenge_method: 'S256',
    state: client.randomState(),
  }), redirectUri);
}

export function formOf(html: string): { action: string; csrf: string } {
  const action = /<form method="post" action="([^"]+)"/.exec(html)?.[1];
  const csrf = /name="csrf" value="([^"]+)"/.exec(html)?.[1];
  if (!action || !csrf) throw new Error(`no form in page: ${html.slice(0, 300)}`);
  return { action, csrf };
}

export interface SignInOptions {
  config: client.Configuration;
  baseUrl: string;
  redirectUri: string;
  scope: string;
  email: string;
  password: string;
  jar?: CookieJar;
  /** For a third-party app: approve on the consent page. */
  approve?: boolean;
  setCookies?: string[];
  pages?: string[];
}

/** The whole browser side of an authorization-code + PKCE sign-in; returns the tokens. */
export async function signIn(options: SignInOptions) {
  const jar = options.jar ?? new CookieJar();
  const verifier = client.randomPKCECodeVerifier();
  const state = client.randomState();
  const authorizationUrl = client.buildAuthorizationUrl(options.config, {
    redirect_uri: options.redirectUri,
    scope: options.scope,
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state,
  });
  let result = await browse(jar, authorizationUrl, options.redirectUri, {}, options.setCookies);
  if (result.kind === 'page') {
    options.pages?.push(result.html);
    if (!result.html.includes('name="password"')) throw new Error(`expected the sign-in page, got ${result.status}: ${result.html.slice(0, 400)}`);
    const form = formOf(result.html);
    result = await browse(jar, new URL(form.action, options.baseUrl), options.redirectUri, { method: 'POST', form: { csrf: form.csrf, email: options.email, password: options.password } }, options.setCookies);
  }
  if (result.kind === 'page') {
    options.pages?.push(result.html);
    if (!options.approve) throw new Error(`unexpected page ${result.status}: ${result.html.slice(0, 400)}`);
    const form = formOf(result.html);
    result = await browse(jar, new URL(form.action, options.baseUrl), options.redirectUri, { method: 'POST', form: { csrf: form.csrf, decision: 'approve' } }, options.setCookies);
  }
  if (result.kind !== 'callback') throw new Error(`no callback: ${result.status} ${result.html.slice(0, 400)}`);
  const tokens = await client.authorizationCodeGrant(options.config, result.url, { pkceCodeVerifier: verifier, expectedState: state });
  return { tokens, jar, callback: result.url, verifier };
}

export async function discover(url: string, clientId: string, clientAuth: client.ClientAuth): Promise<client.Configuration> {
  return client.discovery(new URL(url), clientId, undefined, clientAuth, { execute: [client.allowInsecureRequests] });
}

export async function registerApp(database: Database, serverSecret: Buffer, options: { accountId: string; kind: string; redirectUris?: string[]; scopes?: string; name?: string }) {
  return new AppsService(database.em(), sealersFor(serverSecret).clientSecrets, database.transactions).create({
    accountId: options.accountId,
    name: options.name ?? `${options.kind} app`,
    kind: options.kind,
    redirectUris: options.redirectUris ?? [],
    scopes: options.scopes,
  });
}

export async function givePassword(database: Database, userId: string, password: string): Promise<void> {
  await setPassword(database.em(), database.transactions, userId, password);
}

export const PASSWORD = 'correct horse battery staple';

export interface Member {
  accountId: string;
  /** The account's full-access key (an account key: admin rights, not the owner's). */
  ownerKey: string;
  /** A user key of the account's owner: owner rights. */
  ownerUserKey: string;
  userId: string;
  email: string;
}

/** A fresh account (with its owner's full-access key) and one member who has a password. */
export async function newMember(database: Database, role: 'user' | 'admin' = 'user'): Promise<Member> {
  const suffix = randomUUID().slice(0, 8);
  const booted = await database.transactions.run(database.em(), (tx) => bootstrapAccount(tx, { accountName: `Account ${suffix}`, ownerEmail: `owner-${suffix}@example.com` }));
  const em = database.em();
  const user = em.create(User, { account: em.getReference(Account, booted.account.id), name: `User ${suffix}`, email: `user-${suffix}@example.com`, timeZone: 'Etc/UTC', color: 'green', role });
  await em.persist(user).flush();
  await givePassword(database, user.id, PASSWORD);
  const ownerUserKey = await database.transactions.run(database.em(), (tx) => new AccountsService(tx).createApiKey({ accountId: booted.account.id, userId: booted.owner.id }));
  return { accountId: booted.account.id, ownerKey: booted.apiKey, ownerUserKey: ownerUserKey.apiKey, userId: user.id, email: user.email };
}

/** A v2 REST call over HTTP. */
export async function api(instance: { url: string }, method: string, path: string, authorization: string, body?: unknown) {
  const response = await fetch(`${instance.url}${path}`, {
    method,
    headers: { Accept: 'application/vnd.pagerduty+json;version=2', Authorization: authorization, ...(body ? { 'Content-Type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
}

export async function graphqlCall(instance: { url: string }, authorization: string, query: string, variables?: Record<string, unknown>) {
  const response = await fetch(`${instance.url}/graphql`, { method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: authorization }, body: JSON.stringify({ query, variables }) });
  return { status: response.status, ...(await response.json() as { data?: any; errors?: any[] }) };
}

export interface OAuthFixture {
  database: Database;
  instances: Instance[];
  serverSecret: Buffer;
  /** Every log line both instances wrote. */
  logs: string[];
}

/** A test file's own database and two instances on it (filled in by beforeAll, closed by afterAll). */
export function useOAuthServers(count = 2, settings: Partial<AppSettings> = {}): OAuthFixture {
  const fixture = { logs: [] as string[] } as OAuthFixture;
  let stop: (() => Promise<void>) | undefined;
  beforeAll(async () => {
    fixture.database = await openTestDatabase();
    const started = await startInstances(fixture.database, count, fixture.logs, settings);
    fixture.instances = started.instances;
    fixture.serverSecret = started.serverSecret;
    stop = started.stop;
    // The embedded database (no DATABASE_URL) migrates in WASM: slower than a PostgreSQL server.
  }, 90_000);
  afterAll(async () => {
    await stop?.();
    await fixture.database?.close();
  });
  return fixture;
}

/** The OAuth error code a refused request ends with ('granted' when it was not refused; a 401 carries its challenge, which matchers cannot walk). */
export function oauthError(request: Promise<unknown>): Promise<string | undefined> {
  return request.then(
    () => 'granted',
    (error: { error?: string; cause?: Array<{ parameters?: { error?: string } }> }) => error.error ?? (Array.isArray(error.cause) ? error.cause[0]?.parameters?.error : undefined),
  );
}
