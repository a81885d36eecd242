import 'reflect-metadata';
import { randomBytes, randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import supertest from 'supertest';
import { createApp, type App, type AppSettings } from '../../src/app/create-app.js';
import type { HttpServerLimits } from '../../src/http/managed-server.js';
import type { Runtime } from '../../src/http/runtime.js';
import { createLogger, type Logger } from '../../src/logging/logger.js';
import { createRateLimiter, type RateLimiter } from '../../src/auth/rate-limit.js';
import { bootstrapAccount } from '../../src/accounts/bootstrap.js';
import { AccountsService } from '../../src/accounts/accounts.service.js';
import { Account } from '../../src/accounts/account.entity.js';
import { User } from '../../src/users/user.entity.js';
import type { UserRole } from '../../src/auth/roles.js';
import { openTestDatabase, type TestDatabase, type TestDatabaseOptions } from './database.js';
import { assertMatchesReference, ServedDocumentChecker } from './openapi.js';
import { DEFAULT_MAX_COST } from '../../src/graphql/cost.js';

export const TEST_SETTINGS: AppSettings = {
  publicApiUrl: 'https://api.test.example',
  publicWebUrl: 'https://app.test.example',
  publicFeedUrl: 'https://feeds.test.example',
  apiVendor: 'pagerduty',
  introspection: true,
  landingPage: false,
  corsOrigins: ['https://app.test.example'],
  graphqlMaxDepth: 12,
  graphqlMaxCost: DEFAULT_MAX_COST,
};

export type Credential = { token: string } | { bearer: string } | { header: string } | undefined;

export interface RestCall {
  key?: Credential;
  body?: unknown;
  headers?: Record<string, string>;
}

export interface TestAccount {
  id: string;
  ownerId: string;
  /** Full-access account key. */
  key: Credential;
}

export interface TestUser {
  id: string;
  email: string;
  name: string;
  key: Credential;
}

function authorization(credential: Credential): Record<string, string> {
  if (!credential) return {};
  if ('token' in credential) return { Authorization: `Token token=${credential.token}` };
  if ('bearer' in credential) return { Authorization: `Bearer ${credential.bearer}` };
  return { Authorization: credential.header };
}

export interface Harness {
  database: TestDatabase;
  /** The app as main.ts runs it: its HTTP server (not listening unless the test listens), drain and stop. */
  server: App;
  rateLimiter: RateLimiter;
  runtime: Runtime;
  app: Parameters<typeof supertest>[0];
  /** The app's own HTTP server (with its `clientError` handling), not listening until a test asks. */
  httpServer: import('node:http').Server;
  logs: string[];
  /** Every response is checked against the reference OpenAPI document and the served one before it is returned. */
  rest(method: 'get' | 'post' | 'put' | 'delete', path: string, call?: RestCall): Promise<supertest.Response>;
  graphql<T = any>(query: string, variables?: Record<string, unknown>, key?: Credential): Promise<{ status: number; data?: T; errors?: any[] }>;
  createAccount(name?: string): Promise<TestAccount>;
  createUser(account: TestAccount, options?: { role?: UserRole; name?: string; email?: string }): Promise<TestUser>;
  accountKey(account: TestAccount, options?: { readOnly?: boolean }): Promise<Credential>;
  /** A user key of the account's owner: owner rights (the account key has an admin's). */
  ownerKey(account: TestAccount): Promise<Credential>;
  close(): Promise<void>;
}

export interface HarnessOptions extends TestDatabaseOptions {
  settings?: Partial<AppSettings>;
  /** Defaults to an in-memory limiter generous enough never to interfere. */
  rateLimiter?: (logger: Logger) => RateLimiter;
  /** PostgreSQL only: connect through a proxy on this port, with this pool acquire timeout. */
  throughPort?: TestDatabaseOptions['throughPort'];
  poolTimeoutMs?: TestDatabaseOptions['poolTimeoutMs'];
  http?: HttpServerLimits;
  outageLogIntervalMs?: number;
  /** Serves `GET /metrics` to this bearer token. */
  metricsToken?: string;
  liveUpdates?: import('../../src/config/config.js').LiveUpdateLimits;
  /** The server's audit checkpoint interval (hourly unless a test wants to see it tick). */
  auditCheckpointIntervalMs?: number;
  auditRootIndexIntervalMs?: number;
}

export async function startHarness(options: HarnessOptions = {}): Promise<Harness> {
  const database = await openTestDatabase(options);
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      logs.push(String(chunk));
      done();
    },
  });
  const logger = createLogger({ logLevel: 'debug' }, sink);
  const rateLimiter = options.rateLimiter?.(logger) ?? createRateLimiter({ perMinute: 1_000_000, logger });
  const server = await createApp({
    settings: { ...TEST_SETTINGS, ...options.settings },
    database,
    logger,
    serverSecret: randomBytes(32),
    rateLimiter,
    http: options.http,
    outageLogIntervalMs: options.outageLogIntervalMs,
    metricsToken: options.metricsToken,
    liveUpdates: options.liveUpdates,
    auditCheckpointIntervalMs: options.auditCheckpointIntervalMs,
    // Off unless a test asks: its background statements would show in statement counts and row fingerprints. Reads are whole either way.
    auditRootIndexIntervalMs: options.auditRootIndexIntervalMs ?? 3_600_000,
  });
  const agent = supertest(server.app);
  const served = options.settings?.openapiDocument === false ? server.openApiDocument : (await agent.get('/openapi.json').expect(200)).body;
  const servedDocument = new ServedDocumentChecker(served);

  const harness: Harness = {
    database,
    server,
    rateLimiter,
    runtime: server.runtime,
    app: server.app,
    httpServer: server.httpServer,
    logs,
    async rest(method, path, call = {}) {
      let request = agent[method](path).set({ Accept: 'application/vnd.pagerduty+json;version=2', ...authorization(call.key), ...call.headers });
      if (call.body !== undefined) {
        if (typeof call.body === 'string' && !call.headers?.['Content-Type']) request = request.set('Content-Type', 'application/json');
        request = request.send(call.body as object);
      }
      const response = await request;
      const body = response.status === 204 ? response.text : response.body;
      assertMatchesReference(method, path, response.status, response.headers['content-type'], body);
      servedDocument.check(method, path, response.status, response.headers, body);
      return response;
    },
    async graphql(query, variables, key) {
      const response = await agent.post('/graphql').set({ 'Content-Type': 'application/json', ...authorization(key) }).send({ query, variables });
      return { status: response.status, data: response.body.data, errors: response.body.errors };
    },
    async createAccount(name = `Account ${randomUUID().slice(0, 8)}`) {
      const result = await database.transactions.run(database.em(), (tx) => bootstrapAccount(tx, { accountName: name, ownerEmail: `owner-${randomUUID().slice(0, 8)}@example.com`, ownerName: `Owner of ${name}` }));
      return { id: result.account.id, ownerId: result.owner.id, key: { token: result.apiKey } };
    },
    async createUser(account, userOptions = {}) {
      const em = database.em();
      const suffix = randomUUID().slice(0, 8);
      const user = em.create(User, {
        account: em.getReference(Account, account.id),
        name: userOptions.name ?? `User ${suffix}`,
        email: userOptions.email ?? `user-${suffix}@example.com`,
        timeZone: 'Etc/UTC',
        color: 'green',
        role: userOptions.role ?? 'user',
      });
      await em.persist(user).flush();
      const key = await database.transactions.run(database.em(), (tx) => new AccountsService(tx).createApiKey({ accountId: account.id, userId: user.id }));
      return { id: user.id, email: user.email, name: user.name, key: { token: key.apiKey } };
    },
    async accountKey(account, keyOptions = {}) {
      const key = await database.transactions.run(database.em(), (tx) => new AccountsService(tx).createApiKey({ accountId: account.id, readOnly: keyOptions.readOnly }));
      return { token: key.apiKey };
    },
    async ownerKey(account) {
      const key = await database.transactions.run(database.em(), (tx) => new AccountsService(tx).createApiKey({ accountId: account.id, userId: account.ownerId }));
      return { token: key.apiKey };
    },
    async close() {
      await server.stop();
      await rateLimiter.close();
      await database.close();
    },
  };
  return harness;
}
