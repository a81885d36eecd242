import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { startHarness, type Credential, type Harness } from '../../test/support/harness.js';
import { digestSecret } from '../auth/secrets.js';
import type { DelegationType } from './oauth-delegation.entity.js';
import { issueDelegation } from './oauth-delegation.issuing.js';

let h: Harness;
const statements: string[] = [];
/** Every response body of this file, to prove no token or digest ever leaves the server. */
const bodies: string[] = [];
const secrets: string[] = [];

beforeAll(async () => {
  h = await startHarness({ onQuery: (sql) => statements.push(sql) });
});
afterAll(async () => {
  await h.close();
});

async function rest(method: 'get' | 'delete', path: string, key: Credential) {
  const response = await h.rest(method, path, { key });
  bodies.push(response.text);
  return response;
}

async function graphql(query: string, variables: Record<string, unknown>, key: Credential) {
  const result = await h.graphql(query, variables, key);
  bodies.push(JSON.stringify(result));
  return result;
}

interface Issued {
  id: string;
  token: string;
  key: Credential;
}

async function issue(userId: string, type: DelegationType, scopes = 'users.read oauth_delegations.read', clientId?: string): Promise<Issued> {
  const { delegation, accessToken } = await h.database.transactions.run(h.database.em(), (tx) => issueDelegation(tx, { userId, type, scopes, clientId }));
  secrets.push(accessToken, digestSecret(accessToken));
  return { id: delegation.id, token: accessToken, key: { bearer: accessToken } };
}

const TYPES: DelegationType[] = ['mobile', 'web', 'integration'];

/**
 * 60 delegations: types in turn, every 4th revoked, and created_at shared by groups of three
 * (so the id tie-break matters). Returns the ids in the documented order: created_at desc, id desc.
 */
async function sixty(userId: string) {
  const issued: { id: string; type: DelegationType; status: 'issued' | 'revoked'; createdAt: number }[] = [];
  const base = Date.UTC(2026, 0, 1, 12);
  for (let index = 0; index < 60; index++) {
    const type = TYPES[index % 3]!;
    const { id } = await issue(userId, type);
    const createdAt = base + Math.floor(index / 3) * 1000;
    const status = index % 4 === 0 ? 'revoked' : 'issued';
    await h.database.em().execute(
      `update oauth_delegations set created_at = ?, status = ?, revoked_at = ? where id = ?`,
      [new Date(createdAt).toISOString(), status, status === 'revoked' ? new Date(createdAt + 500).toISOString() : null, id],
    );
    issued.push({ id, type, status, createdAt });
  }
  const ordered = [...issued].sort((a, b) => b.createdAt - a.createdAt || (a.id < b.id ? 1 : -1));
  return { issued, ordered: ordered.map((entry) => entry.id) };
}

/** Follows next_cursor to the end; checks the envelope rules on the way. */
async function pageThrough(path: string, key: Credential, limit: number) {
  const ids: string[] = [];
  const sizes: number[] = [];
  let cursor: string | undefined;
  for (let guard = 0; guard < 20; guard++) {
    const separator = path.includes('?') ? '&' : '?';
    const response = await rest('get', `${path}${separator}limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, key);
    expect(response.status).toBe(200);
    expect(response.body.limit).toBe(limit);
    sizes.push(response.body.oauth_delegations.length);
    ids.push(...response.body.oauth_delegations.map((delegation: { id: string }) => delegation.id));
    if (!response.body.more) {
      expect('next_cursor' in response.body).toBe(false);
      return { ids, sizes };
    }
    expect(typeof response.body.next_cursor).toBe('string');
    cursor = response.body.next_cursor;
  }
  throw new Error('paging did not end');
}

describe('GET /users/{id}/oauth_delegations: paging and filters', () => {
  test('cursor paging through 60 delegations with limit 25 returns each exactly once, newest first', async () => {
    const account = await h.createAccount();
    const user = await h.createUser(account);
    const { ordered } = await sixty(user.id);

    const { ids, sizes } = await pageThrough(`/users/${user.id}/oauth_delegations`, account.key, 25);
    expect(sizes).toEqual([25, 25, 10]);
    expect(new Set(ids).size).toBe(60);
    expect(ids).toEqual(ordered);
  });

  test('delegation_type and status filter (comma lists), also while paging', async () => {
    const account = await h.createAccount();
    const user = await h.createUser(account);
    const { issued, ordered } = await sixty(user.id);
    const expected = (keep: (entry: (typeof issued)[number]) => boolean) => ordered.filter((id) => keep(issued.find((entry) => entry.id === id)!));

    const mobile = await rest('get', `/users/${user.id}/oauth_delegations?delegation_type=mobile&limit=100`, account.key);
    expect(mobile.body.oauth_delegations.map((d: { id: string }) => d.id)).toEqual(expected((e) => e.type === 'mobile'));
    expect(mobile.body.oauth_delegations.every((d: { delegation_type: string }) => d.delegation_type === 'mobile')).toBe(true);

    const revoked = await rest('get', `/users/${user.id}/oauth_delegations?status=revoked&limit=100`, account.key);
    expect(revoked.body.oauth_delegations.map((d: { id: string }) => d.id)).toEqual(expected((e) => e.status === 'revoked'));
    expect(revoked.body.more).toBe(false);

    const both = await rest('get', `/users/${user.id}/oauth_delegations?status=issued,revoked&limit=100`, account.key);
    expect(both.body.oauth_delegations).toHaveLength(60);

    const webIssued = await rest('get', `/users/${user.id}/oauth_delegations?delegation_type=web&status=issued&limit=100`, account.key);
    expect(webIssued.body.oauth_delegations.map((d: { id: string }) => d.id)).toEqual(expected((e) => e.type === 'web' && e.status === 'issued'));

    // The reference's description writes the filter as type=web,mobile: accepted as an alias.
    const alias = await rest('get', `/users/${user.id}/oauth_delegations?type=mobile&limit=100`, account.key);
    expect(alias.body.oauth_delegations).toEqual(mobile.body.oauth_delegations);
    expect((await rest('get', `/users/${user.id}/oauth_delegations?type=mobile&delegation_type=web`, account.key)).status).toBe(400);

    const paged = await pageThrough(`/users/${user.id}/oauth_delegations?delegation_type=mobile,web`, account.key, 25);
    expect(paged.sizes).toEqual([25, 15]);
    expect(paged.ids).toEqual(expected((e) => e.type !== 'integration'));
  });

  test('a modified, truncated, foreign or made-up cursor is 400', async () => {
    const account = await h.createAccount();
    const user = await h.createUser(account);
    for (let index = 0; index < 3; index++) await issue(user.id, 'web');
    const first = await rest('get', `/users/${user.id}/oauth_delegations?limit=1`, account.key);
    const cursor: string = first.body.next_cursor;
    const [body, signature] = cursor.split('.') as [string, string];

    const payload = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
    const forgedBody = Buffer.from(JSON.stringify({ ...payload, c: '2099-01-01T00:00:00.000Z' }), 'utf8').toString('base64url');
    // The first character: the last one of a 16-byte base64url value carries padding bits.
    const flipped = (signature.startsWith('A') ? 'B' : 'A') + signature.slice(1);
    const usersCursor = (await graphql('{ users(first: 1) { pageInfo { endCursor } } }', {}, account.key)).data.users.pageInfo.endCursor;

    for (const bad of [`${forgedBody}.${signature}`, `${body}.${flipped}`, body, `${cursor}.x`, 'bm90LWEtY3Vyc29y', usersCursor]) {
      const response = await rest('get', `/users/${user.id}/oauth_delegations?cursor=${encodeURIComponent(bad)}`, account.key);
      expect({ bad, status: response.status, code: response.body.error?.code }).toEqual({ bad, status: 400, code: 2001 });
    }
    const graphqlResult = await graphql('query ($u: ID!, $a: String) { oauthDelegations(userId: $u, after: $a) { nodes { id } } }', { u: user.id, a: `${body}.${flipped}` }, account.key);
    expect(graphqlResult.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
  });

  test('bad limit and filter values are 400; a limit above 100 is served as 100', async () => {
    const account = await h.createAccount();
    const user = await h.createUser(account);
    await issue(user.id, 'mobile');
    for (const query of ['limit=0', 'limit=-1', 'limit=ten', 'delegation_type=desktop', 'status=active', 'delegation_type=mobile,sms']) {
      const response = await rest('get', `/users/${user.id}/oauth_delegations?${query}`, account.key);
      expect({ query, status: response.status }).toEqual({ query, status: 400 });
    }
    const capped = await rest('get', `/users/${user.id}/oauth_delegations?limit=500`, account.key);
    expect(capped.status).toBe(200);
    expect(capped.body.limit).toBe(100);
    expect(capped.body.more).toBe(false);
  });
});

describe('GET /users/{id}/oauth_delegations: which users, and who may read', () => {
  test('unknown, deleted and other accounts\' users are 404', async () => {
    const account = await h.createAccount();
    const other = await h.createAccount();
    const stranger = await h.createUser(other);
    await issue(stranger.id, 'mobile');
    const gone = await h.createUser(account);
    expect((await rest('delete', `/users/${gone.id}`, account.key)).status).toBe(204);

    for (const id of [stranger.id, gone.id, 'PNOSUCH', 'not-an-id']) {
      const response = await rest('get', `/users/${id}/oauth_delegations`, account.key);
      expect({ id, status: response.status, code: response.body.error?.code }).toEqual({ id, status: 404, code: 2100 });
    }
  });

  test('access: the user themself (key or token with oauth_delegations.read) or can_update_user', async () => {
    const account = await h.createAccount();
    const user = await h.createUser(account, { role: 'observer' });
    const colleague = await h.createUser(account);
    const admin = await h.createUser(account, { role: 'admin' });
    const readOnlyKey = await h.accountKey(account, { readOnly: true });
    const scoped = await issue(user.id, 'mobile', 'oauth_delegations.read');
    const unscoped = await issue(user.id, 'web', 'users.read');
    const path = `/users/${user.id}/oauth_delegations`;

    for (const key of [user.key, scoped.key, admin.key, account.key]) {
      const response = await rest('get', path, key);
      expect(response.status).toBe(200);
      expect(response.body.oauth_delegations).toHaveLength(2);
    }
    for (const key of [colleague.key, readOnlyKey, unscoped.key]) {
      const response = await rest('get', path, key);
      expect(response.status).toBe(403);
      expect(response.body.error.code).toBe(2010);
    }
    expect((await rest('get', path, unscoped.key)).body.error.errors.join(' ')).toContain('oauth_delegations.read');
    expect((await rest('get', path, { bearer: 'y'.repeat(43) })).status).toBe(401);
  });
});

describe('GET /users/{id}/oauth_delegations/{delegation_id}', () => {
  test('answers {"oauth_delegation": {...}} in the v2 shape', async () => {
    const account = await h.createAccount();
    const user = await h.createUser(account);
    const before = Date.now();
    const web = await issue(user.id, 'web', 'openid profile users.read', 'PagerDutyLogin');

    const response = await rest('get', `/users/${user.id}/oauth_delegations/${web.id}`, account.key);
    expect(response.status).toBe(200);
    const delegation = response.body.oauth_delegation;
    expect(delegation).toMatchObject({
      id: web.id,
      type: 'oauth_delegation',
      delegation_type: 'web',
      client_id: 'PagerDutyLogin',
      scope: 'openid profile users.read',
      status: 'issued',
      self: `https://api.test.example/users/${user.id}/oauth_delegations/${web.id}`,
    });
    expect(delegation.created_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/);
    expect(Date.parse(delegation.created_at)).toBeGreaterThanOrEqual(before - 1000);
    // A web session lasts a week unless issued otherwise.
    expect(Date.parse(delegation.expires_at) - Date.parse(delegation.created_at)).toBe(7 * 86_400_000);

    const listed = await rest('get', `/users/${user.id}/oauth_delegations`, account.key);
    expect(listed.body.oauth_delegations[0]).toEqual(delegation);
  });

  test('another user\'s or account\'s delegation, an unknown uuid and a non-uuid id are all 404', async () => {
    const account = await h.createAccount();
    const user = await h.createUser(account);
    const colleague = await h.createUser(account);
    const colleagues = await issue(colleague.id, 'mobile');
    const other = await h.createAccount();
    const stranger = await h.createUser(other);
    const strangers = await issue(stranger.id, 'mobile');

    const paths = [
      `/users/${user.id}/oauth_delegations/${colleagues.id}`,
      `/users/${stranger.id}/oauth_delegations/${strangers.id}`,
      `/users/${user.id}/oauth_delegations/${strangers.id}`,
      `/users/${user.id}/oauth_delegations/00000000-0000-4000-8000-000000000000`,
      `/users/${user.id}/oauth_delegations/not-a-uuid`,
      `/users/${user.id}/oauth_delegations/${colleagues.id.toUpperCase()}x`,
    ];
    for (const path of paths) {
      const response = await rest('get', path, account.key);
      expect({ path, status: response.status, code: response.body.error?.code }).toEqual({ path, status: 404, code: 2100 });
    }
    const denied = await rest('get', `/users/${colleague.id}/oauth_delegations/${colleagues.id}`, user.key);
    expect(denied.status).toBe(403);
    expect((await rest('get', `/users/${colleague.id}/oauth_delegations/${colleagues.id}`, colleague.key)).status).toBe(200);
  });
});

const FIELDS = 'id userId delegationType clientId scope scopes status createdAt expiresAt revokedAt self htmlUrl';

describe('GraphQL: connections', () => {
  test('User.oauthDelegations is a connection with filters, cursors and totalCount', async () => {
    const account = await h.createAccount();
    const user = await h.createUser(account);
    const { issued, ordered } = await sixty(user.id);
    const token = await issue(user.id, 'mobile', 'users.read oauth_delegations.read');
    const query = `query ($after: String) { viewer { oauthDelegations(first: 25, types: [MOBILE, WEB], statuses: [ISSUED], after: $after) {
      totalCount edges { cursor node { ${FIELDS} } } pageInfo { hasNextPage hasPreviousPage endCursor } } } }`;
    const expected = [token.id, ...ordered.filter((id) => {
      const entry = issued.find((candidate) => candidate.id === id)!;
      return entry.type !== 'integration' && entry.status === 'issued';
    })];

    const seen: string[] = [];
    let after: string | null = null;
    for (let guard = 0; guard < 5; guard++) {
      const result = await graphql(query, { after }, token.key);
      expect(result.errors).toBeUndefined();
      const connection = result.data.viewer.oauthDelegations;
      expect(connection.totalCount).toBe(expected.length);
      seen.push(...connection.edges.map((edge: { node: { id: string } }) => edge.node.id));
      expect(connection.pageInfo.hasPreviousPage).toBe(after !== null);
      if (!connection.pageInfo.hasNextPage) break;
      after = connection.pageInfo.endCursor;
    }
    expect(seen).toEqual(expected);

    const first = (await graphql(`{ viewer { oauthDelegations(first: 1) { nodes { ${FIELDS} } } } }`, {}, token.key)).data.viewer.oauthDelegations.nodes[0];
    expect(first).toMatchObject({ id: token.id, userId: user.id, delegationType: 'MOBILE', status: 'ISSUED', scopes: ['users.read', 'oauth_delegations.read'], revokedAt: null });
  });

  test('the root oauthDelegations query and REST agree', async () => {
    const account = await h.createAccount();
    const user = await h.createUser(account);
    for (const type of TYPES) await issue(user.id, type);
    const result = await graphql('query ($u: ID!) { oauthDelegations(userId: $u) { nodes { id } } }', { u: user.id }, account.key);
    const listed = await rest('get', `/users/${user.id}/oauth_delegations`, account.key);
    expect(result.data.oauthDelegations.nodes.map((node: { id: string }) => node.id)).toEqual(listed.body.oauth_delegations.map((d: { id: string }) => d.id));
  });

  test('a page of users loads everyone\'s delegations in one statement', async () => {
    const account = await h.createAccount();
    const users = [];
    for (let index = 0; index < 5; index++) {
      const user = await h.createUser(account);
      users.push(user);
      for (let n = 0; n <= index; n++) await issue(user.id, n % 2 ? 'web' : 'mobile');
    }
    statements.length = 0;
    const result = await graphql('{ users(first: 100) { nodes { id oauthDelegations(first: 3) { nodes { id } pageInfo { hasNextPage } } } } }', {}, account.key);
    expect(result.errors).toBeUndefined();
    const byUser = new Map<string, { nodes: unknown[]; pageInfo: { hasNextPage: boolean } }>(
      result.data.users.nodes.map((node: { id: string; oauthDelegations: never }) => [node.id, node.oauthDelegations]),
    );
    users.forEach((user, index) => {
      expect(byUser.get(user.id)!.nodes).toHaveLength(Math.min(index + 1, 3));
      expect(byUser.get(user.id)!.pageInfo.hasNextPage).toBe(index + 1 > 3);
    });
    expect(statements.filter((sql) => /oauth_delegations/i.test(sql))).toHaveLength(1);
  });
});

// Declared last: its final test scans the response bodies of every test in the file.
describe('GraphQL: access, and secrets kept', () => {
  test('another user\'s delegations are FORBIDDEN on that field only; a token without the scope is FORBIDDEN naming it', async () => {
    const account = await h.createAccount();
    const user = await h.createUser(account);
    const colleague = await h.createUser(account);
    await issue(user.id, 'mobile');
    await issue(colleague.id, 'mobile');

    const result = await graphql('{ users(first: 100) { nodes { id oauthDelegations { totalCount } } } }', {}, user.key);
    const nodes = result.data.users.nodes as { id: string; oauthDelegations: { totalCount: number } | null }[];
    expect(nodes.find((node) => node.id === user.id)!.oauthDelegations).toEqual({ totalCount: 1 });
    expect(nodes.find((node) => node.id === colleague.id)!.oauthDelegations).toBeNull();
    expect(result.errors!.length).toBeGreaterThan(0);
    expect(result.errors!.every((error) => error.extensions.code === 'FORBIDDEN')).toBe(true);

    const unscoped = await issue(user.id, 'web', 'users.read');
    const denied = await graphql('{ viewer { id oauthDelegations { totalCount } } }', {}, unscoped.key);
    expect(denied.data.viewer.oauthDelegations).toBeNull();
    expect(denied.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    expect(denied.errors?.[0]?.message).toContain('oauth_delegations.read');

    const single = await graphql('query ($id: ID!) { oauthDelegation(id: $id) { id } }', { id: (await issue(colleague.id, 'web')).id }, user.key);
    expect(single.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    const badFirst = await graphql('query ($u: ID!) { oauthDelegations(userId: $u, first: 0) { nodes { id } } }', { u: user.id }, user.key);
    expect(badFirst.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
  });

  test('the access token and its digest appear in no response on either face, nor in the schema', async () => {
    const account = await h.createAccount();
    const user = await h.createUser(account);
    const mobile = await issue(user.id, 'mobile', 'users.read oauth_delegations.read oauth_delegations.write');
    await issue(user.id, 'web');

    await rest('get', `/users/${user.id}/oauth_delegations`, account.key);
    await rest('get', `/users/${user.id}/oauth_delegations/${mobile.id}`, mobile.key);
    await rest('get', `/users/me`, mobile.key);
    await graphql(`query ($u: ID!, $id: ID!) { oauthDelegations(userId: $u) { nodes { ${FIELDS} } } oauthDelegation(id: $id) { ${FIELDS} } }`, { u: user.id, id: mobile.id }, mobile.key);
    await rest('delete', `/oauth_delegations?user_id=${user.id}&type=web`, mobile.key);
    await rest('get', `/users/${user.id}/oauth_delegations?status=revoked`, account.key);

    const type = await graphql('{ __type(name: "OAuthDelegation") { fields { name } } }', {}, account.key);
    const fields = type.data.__type.fields.map((field: { name: string }) => field.name);
    expect(fields.filter((name: string) => /digest|token|secret/i.test(name))).toEqual([]);

    expect(bodies.length).toBeGreaterThan(20);
    const everything = bodies.join('\n');
    for (const secret of secrets) expect(everything.includes(secret)).toBe(false);
    expect(everything).not.toMatch(/digest/i);
  });
});
