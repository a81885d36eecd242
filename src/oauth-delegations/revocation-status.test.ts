import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { startHarness, type Credential, type Harness } from '../../test/support/harness.js';
import { issueDelegation } from './oauth-delegation.issuing.js';

let h: Harness;

beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h.close();
});

async function bearer(userId: string, scopes: string): Promise<Credential> {
  const { accessToken } = await h.database.transactions.run(h.database.em(), (tx) => issueDelegation(tx, { userId, type: 'integration', scopes }));
  return { bearer: accessToken };
}

const PATH = '/oauth_delegations/revocation_requests/status';
const QUERY = 'query ($end: DateTime) { oauthDelegationRevocationRequestsStatus(requestedAtEnd: $end) { pendingCount requestedAtEnd } }';

describe('GET /oauth_delegations/revocation_requests/status (deprecated)', () => {
  test('answers pending_count 0 and the given instant, with Deprecation and successor Link headers', async () => {
    const account = await h.createAccount();
    const response = await h.rest('get', `${PATH}?requested_at_end=${encodeURIComponent('2026-01-01T12:00:00Z')}`, { key: account.key });
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ pending_count: 0, requested_at_end: '2026-01-01T12:00:00.000Z' });
    expect(response.headers.deprecation).toBe('true');
    expect(response.headers.link).toMatch(/^<https:\/\/api\.test\.example\/oauth_delegations>; rel="successor-version"/);

    const offset = await h.rest('get', `${PATH}?requested_at_end=${encodeURIComponent('2026-01-01T14:00:00+02:00')}`, { key: account.key });
    expect(offset.body.requested_at_end).toBe('2026-01-01T12:00:00.000Z');
  });

  test('without requested_at_end, it is now', async () => {
    const account = await h.createAccount();
    const before = Date.now();
    const response = await h.rest('get', PATH, { key: account.key });
    const after = Date.now();
    expect(response.status).toBe(200);
    expect(response.body.pending_count).toBe(0);
    const end = Date.parse(response.body.requested_at_end);
    expect(end).toBeGreaterThanOrEqual(before);
    expect(end).toBeLessThanOrEqual(after);
  });

  test('a requested_at_end that is not an ISO 8601 date-time is 400 (headers still announce the successor)', async () => {
    const account = await h.createAccount();
    for (const value of ['yesterday', '2026-13-01T00:00:00Z', '2026-01-01', '1767268800', '2026-01-01T25:00:00Z']) {
      const response = await h.rest('get', `${PATH}?requested_at_end=${encodeURIComponent(value)}`, { key: account.key });
      expect({ value, status: response.status, code: response.body.error?.code }).toEqual({ value, status: 400, code: 2001 });
      expect(response.body.error.errors.join(' ')).toContain('requested_at_end');
      expect(response.headers.deprecation).toBe('true');
    }
  });

  test('owners, admins and account keys (also read-only) only; others 403; scope oauth_delegations.read for tokens', async () => {
    const account = await h.createAccount();
    const admin = await h.createUser(account, { role: 'admin' });
    const allowed: Credential[] = [
      account.key,
      await h.accountKey(account, { readOnly: true }),
      admin.key,
      await bearer(admin.id, 'oauth_delegations.read'),
      await bearer(account.ownerId, 'oauth_delegations.read'),
    ];
    for (const key of allowed) expect((await h.rest('get', PATH, { key })).status).toBe(200);

    for (const role of ['user', 'limited_user', 'observer', 'restricted_access', 'read_only_user', 'read_only_limited_user'] as const) {
      const user = await h.createUser(account, { role });
      const response = await h.rest('get', PATH, { key: user.key });
      expect({ role, status: response.status, code: response.body.error?.code }).toEqual({ role, status: 403, code: 2010 });
    }
    const plainWithScope = await h.createUser(account, { role: 'user' });
    expect((await h.rest('get', PATH, { key: await bearer(plainWithScope.id, 'oauth_delegations.read') })).status).toBe(403);

    const unscoped = await h.rest('get', PATH, { key: await bearer(admin.id, 'users.read oauth_delegations.write') });
    expect(unscoped.status).toBe(403);
    expect(unscoped.body.error.errors.join(' ')).toContain('oauth_delegations.read');
    expect((await h.rest('get', PATH)).status).toBe(401);
  });

  test('GraphQL: the same answers and rules, and the field is deprecated with a reason', async () => {
    const account = await h.createAccount();
    const result = await h.graphql(QUERY, { end: '2026-01-01T12:00:00Z' }, account.key);
    expect(result.errors).toBeUndefined();
    expect(result.data.oauthDelegationRevocationRequestsStatus).toEqual({ pendingCount: 0, requestedAtEnd: '2026-01-01T12:00:00.000Z' });

    const malformed = await h.graphql(QUERY, { end: 'yesterday' }, account.key);
    expect(malformed.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    const user = await h.createUser(account);
    expect((await h.graphql(QUERY, {}, user.key)).errors?.[0]?.extensions?.code).toBe('FORBIDDEN');

    const schema = await h.graphql('{ __type(name: "Query") { fields(includeDeprecated: true) { name isDeprecated deprecationReason } } }', {}, account.key);
    const field = schema.data.__type.fields.find((candidate: { name: string }) => candidate.name === 'oauthDelegationRevocationRequestsStatus');
    expect(field.isDeprecated).toBe(true);
    expect(field.deprecationReason).toContain('deleteOAuthDelegations');
  });
});
