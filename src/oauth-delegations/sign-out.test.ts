import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { startHarness, type Credential, type Harness, type TestAccount } from '../../test/support/harness.js';
import { digestSecret } from '../auth/secrets.js';
import { bearerCredentials } from './oauth-delegation.credentials.js';
import type { DelegationType } from './oauth-delegation.entity.js';
import { issueDelegation } from './oauth-delegation.issuing.js';

let h: Harness;
const statements: string[] = [];

beforeAll(async () => {
  h = await startHarness({ onQuery: (sql) => statements.push(sql) });
});
afterAll(async () => {
  await h.close();
});

interface Issued {
  id: string;
  token: string;
  key: Credential;
}

async function issue(userId: string, type: DelegationType, scopes = 'users.read oauth_delegations.read oauth_delegations.write'): Promise<Issued> {
  const { delegation, accessToken } = await h.database.transactions.run(h.database.em(), (tx) => issueDelegation(tx, { userId, type, scopes }));
  return { id: delegation.id, token: accessToken, key: { bearer: accessToken } };
}

interface Row {
  id: string;
  status: string;
  revoked_at: Date | null;
  revoked_by_kind: string | null;
  revoked_by_credential_id: string | null;
  revocation_reason: string | null;
  expires_at: Date;
}

async function row(id: string): Promise<Row> {
  const [found] = await h.database.em().execute<Row[]>(
    'select id, status, revoked_at, revoked_by_kind, revoked_by_credential_id, revocation_reason, expires_at from oauth_delegations where id = ?',
    [id],
  );
  // Raw rows: PGlite hands back Dates, PostgreSQL (through MikroORM) ISO strings.
  return { ...found!, revoked_at: found!.revoked_at === null ? null : new Date(found!.revoked_at), expires_at: new Date(found!.expires_at) };
}

async function accountKeyId(account: TestAccount): Promise<string> {
  const [key] = await h.database.em().execute<{ id: string }[]>('select id from api_keys where account_id = ? and user_id is null order by created_at limit 1', [account.id]);
  return key!.id;
}

const DELETE_DELEGATIONS = `mutation ($input: DeleteOAuthDelegationsInput!) { deleteOAuthDelegations(input: $input) { revokedCount } }`;
const VIEWER = '{ viewer { id } }';

describe('bearer tokens', () => {
  test('a delegation\'s token authenticates as its user with its scopes and the user\'s rate-limit budget', async () => {
    const account = await h.createAccount();
    const user = await h.createUser(account, { role: 'admin', name: 'Mobile Admin' });
    const mobile = await issue(user.id, 'mobile', 'users.read oauth_delegations.read');

    const me = await h.rest('get', '/users/me', { key: mobile.key });
    expect(me.status).toBe(200);
    expect(me.body.user.id).toBe(user.id);
    expect(me.body.user.role).toBe('admin');

    const principal = await bearerCredentials.resolve(h.database.em(), digestSecret(mobile.token), new Date());
    expect(principal).toEqual({
      kind: 'oauth',
      accountId: account.id,
      credentialId: mobile.id,
      userId: user.id,
      role: 'admin',
      scopes: new Set(['users.read', 'oauth_delegations.read']),
      firstParty: true,
      summaries: { user: 'Mobile Admin' },
      rateLimitKey: `user:${user.id}`,
      expiresAt: (await row(mobile.id)).expires_at,
    });
  });

  test('an unknown or malformed bearer token is 401 (2006) on both faces', async () => {
    const unknown = await h.rest('get', '/users/me', { key: { bearer: 'x'.repeat(43) } });
    expect(unknown.status).toBe(401);
    expect(unknown.body.error.code).toBe(2006);
    const malformed = await h.rest('get', '/users/me', { key: { header: 'Bearer' } });
    expect(malformed.status).toBe(401);
    const graphql = await h.graphql(VIEWER, {}, { bearer: 'x'.repeat(43) });
    expect(graphql.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
  });

  test('an expired delegation\'s token is 401 on both faces', async () => {
    const account = await h.createAccount();
    const user = await h.createUser(account);
    const web = await issue(user.id, 'web');
    expect((await h.rest('get', '/users/me', { key: web.key })).status).toBe(200);

    await h.database.em().execute(`update oauth_delegations set expires_at = now() - interval '1 second' where id = ?`, [web.id]);

    const rest = await h.rest('get', '/users/me', { key: web.key });
    expect(rest.status).toBe(401);
    expect(rest.body.error.code).toBe(2006);
    const graphql = await h.graphql(VIEWER, {}, web.key);
    expect(graphql.errors?.[0]?.extensions).toMatchObject({ code: 'UNAUTHENTICATED', apiErrorCode: 2006 });
    // Expiry is not revocation: the row still says issued.
    expect((await row(web.id)).status).toBe('issued');
  });

  test('a token without the operation\'s scope is 403 (2010) naming the scope, on both faces', async () => {
    const account = await h.createAccount();
    const user = await h.createUser(account);
    const readOnly = await issue(user.id, 'mobile', 'users.read');

    const rest = await h.rest('delete', `/oauth_delegations?user_id=${user.id}&type=mobile`, { key: readOnly.key });
    expect(rest.status).toBe(403);
    expect(rest.body.error.code).toBe(2010);
    expect(JSON.stringify(rest.body.error)).toContain('oauth_delegations.write');

    const graphql = await h.graphql(DELETE_DELEGATIONS, { input: { userId: user.id, types: ['MOBILE'] } }, readOnly.key);
    expect(graphql.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    expect(graphql.errors?.[0]?.message).toContain('oauth_delegations.write');

    const noUsersRead = await issue(user.id, 'web', 'oauth_delegations.read');
    const me = await h.rest('get', '/users/me', { key: noUsersRead.key });
    expect(me.status).toBe(403);
    expect(me.body.error.errors.join(' ')).toContain('users.read');

    expect((await row(readOnly.id)).status).toBe('issued');
  });

  test('a deleted user\'s tokens are refused even before any revocation ran', async () => {
    const account = await h.createAccount();
    const user = await h.createUser(account);
    const mobile = await issue(user.id, 'mobile');
    await h.database.em().execute('update users set deleted_at = now() where id = ?', [user.id]);
    expect((await h.rest('get', '/users/me', { key: mobile.key })).status).toBe(401);
  });
});

describe('DELETE /oauth_delegations and deleteOAuthDelegations: signing out', () => {
  test('REST sign-out is synchronous: mobile refused on the very next request, web untouched until its own DELETE', async () => {
    const account = await h.createAccount();
    const user = await h.createUser(account);
    const mobile = await issue(user.id, 'mobile');
    const web = await issue(user.id, 'web');
    expect((await h.rest('get', '/users/me', { key: mobile.key })).status).toBe(200);
    expect((await h.rest('get', '/users/me', { key: web.key })).status).toBe(200);

    statements.length = 0;
    const signOut = await h.rest('delete', `/oauth_delegations?user_id=${user.id}&type=mobile`, { key: account.key });
    expect(signOut.status).toBe(200);
    expect(signOut.body).toEqual({ status: 'ok' });
    // One statement revokes: no read-modify-write.
    expect(statements.filter((sql) => /^update\s+"?oauth_delegations"?/i.test(sql.trim()))).toHaveLength(1);

    const refused = await h.rest('get', '/users/me', { key: mobile.key });
    expect(refused.status).toBe(401);
    expect(refused.body.error.code).toBe(2006);
    expect((await h.rest('get', '/users/me', { key: web.key })).status).toBe(200);

    const audit = await row(mobile.id);
    expect(audit).toMatchObject({ status: 'revoked', revoked_by_kind: 'account_key', revoked_by_credential_id: await accountKeyId(account), revocation_reason: 'sign_out' });
    expect(audit.revoked_at).toBeInstanceOf(Date);
    expect(await row(web.id)).toMatchObject({ status: 'issued', revoked_at: null });

    expect((await h.rest('delete', `/oauth_delegations?user_id=${user.id}&type=web`, { key: account.key })).status).toBe(200);
    expect((await h.rest('get', '/users/me', { key: web.key })).status).toBe(401);
    expect((await row(web.id)).status).toBe('revoked');
  });

  test('GraphQL sign-out is synchronous too, and returns the number revoked', async () => {
    const account = await h.createAccount();
    const user = await h.createUser(account);
    const mobile = await issue(user.id, 'mobile');
    const mobile2 = await issue(user.id, 'mobile');
    const web = await issue(user.id, 'web');

    const signOut = await h.graphql(DELETE_DELEGATIONS, { input: { userId: user.id, types: ['MOBILE'] } }, account.key);
    expect(signOut.errors).toBeUndefined();
    expect(signOut.data.deleteOAuthDelegations.revokedCount).toBe(2);

    for (const token of [mobile, mobile2]) {
      const refused = await h.graphql(VIEWER, {}, token.key);
      expect(refused.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
    }
    expect((await h.graphql(VIEWER, {}, web.key)).data?.viewer.id).toBe(user.id);

    const again = await h.graphql(DELETE_DELEGATIONS, { input: { userId: user.id, types: ['MOBILE', 'WEB'] } }, account.key);
    expect(again.data.deleteOAuthDelegations.revokedCount).toBe(1);
    expect((await h.graphql(VIEWER, {}, web.key)).errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
  });

  test('type=mobile,web revokes both and leaves integrations alone', async () => {
    const account = await h.createAccount();
    const user = await h.createUser(account);
    const mobile = await issue(user.id, 'mobile');
    const web = await issue(user.id, 'web');
    const integration = await issue(user.id, 'integration');

    expect((await h.rest('delete', `/oauth_delegations?user_id=${user.id}&type=mobile,web`, { key: account.key })).status).toBe(200);
    expect((await row(mobile.id)).status).toBe('revoked');
    expect((await row(web.id)).status).toBe('revoked');
    expect((await row(integration.id)).status).toBe('issued');
    expect((await h.rest('get', '/users/me', { key: integration.key })).status).toBe(200);
  });

  test('a user may sign themself out with their own token; the audit names that token', async () => {
    const account = await h.createAccount();
    const user = await h.createUser(account, { role: 'limited_user' });
    const mobile = await issue(user.id, 'mobile');

    const response = await h.rest('delete', `/oauth_delegations?user_id=${user.id}&type=mobile`, { key: mobile.key });
    expect(response.status).toBe(200);
    expect(await row(mobile.id)).toMatchObject({ status: 'revoked', revoked_by_kind: 'oauth', revoked_by_credential_id: mobile.id });
    expect((await h.rest('get', '/users/me', { key: mobile.key })).status).toBe(401);
  });
});

describe('DELETE /oauth_delegations and deleteOAuthDelegations: concurrent calls', () => {
  test('20 parallel DELETE calls all answer 200 and revoke every matching delegation exactly once', async () => {
    const account = await h.createAccount();
    const user = await h.createUser(account);
    const mobiles = await Promise.all(Array.from({ length: 8 }, () => issue(user.id, 'mobile')));
    const web = await issue(user.id, 'web');

    const responses = await Promise.all(
      Array.from({ length: 20 }, () => h.rest('delete', `/oauth_delegations?user_id=${user.id}&type=mobile`, { key: account.key })),
    );
    expect(responses.map((response) => response.status)).toEqual(Array(20).fill(200));
    expect(responses.every((response) => response.body.status === 'ok')).toBe(true);

    const rows = await Promise.all(mobiles.map((mobile) => row(mobile.id)));
    expect(rows.every((found) => found.status === 'revoked' && found.revoked_at instanceof Date)).toBe(true);
    // Later calls find nothing left to revoke: the first revocation's audit stays as it was.
    const firstAudit = rows.map((found) => found.revoked_at!.toISOString());
    expect((await h.rest('delete', `/oauth_delegations?user_id=${user.id}&type=mobile`, { key: account.key })).status).toBe(200);
    const after = await Promise.all(mobiles.map((mobile) => row(mobile.id)));
    expect(after.map((found) => found.revoked_at!.toISOString())).toEqual(firstAudit);
    expect((await row(web.id)).status).toBe('issued');
  });

  test('20 parallel GraphQL revocations revoke each delegation exactly once (the counts add up)', async () => {
    const account = await h.createAccount();
    const user = await h.createUser(account);
    await Promise.all(Array.from({ length: 10 }, (_, index) => issue(user.id, index % 2 ? 'mobile' : 'web')));

    const results = await Promise.all(
      Array.from({ length: 20 }, () => h.graphql(DELETE_DELEGATIONS, { input: { userId: user.id, types: ['MOBILE', 'WEB'] } }, account.key)),
    );
    expect(results.every((result) => result.errors === undefined)).toBe(true);
    const total = results.reduce((sum, result) => sum + (result.data.deleteOAuthDelegations.revokedCount as number), 0);
    expect(total).toBe(10);
    const [counts] = await h.database.em().execute<{ revoked: string | number }[]>(
      `select count(*) as revoked from oauth_delegations where user_id = ? and status = 'revoked' and revoked_at is not null`,
      [user.id],
    );
    expect(Number(counts!.revoked)).toBe(10);
  });
});

describe('DELETE /oauth_delegations and deleteOAuthDelegations: isolation, permission, validation', () => {
  test('isolation: user A\'s sign-out leaves user B\'s delegations alone', async () => {
    const account = await h.createAccount();
    const a = await h.createUser(account);
    const b = await h.createUser(account);
    const aMobile = await issue(a.id, 'mobile');
    const bMobile = await issue(b.id, 'mobile');

    expect((await h.rest('delete', `/oauth_delegations?user_id=${a.id}&type=mobile`, { key: account.key })).status).toBe(200);
    expect((await row(aMobile.id)).status).toBe('revoked');
    expect((await row(bMobile.id)).status).toBe('issued');
    expect((await h.rest('get', '/users/me', { key: bMobile.key })).status).toBe(200);
  });

  test('isolation: another account\'s user id is 400 naming it, on both faces, and changes nothing', async () => {
    const mine = await h.createAccount();
    const theirs = await h.createAccount();
    const stranger = await h.createUser(theirs);
    const strangerMobile = await issue(stranger.id, 'mobile');

    const rest = await h.rest('delete', `/oauth_delegations?user_id=${stranger.id}&type=mobile`, { key: mine.key });
    expect(rest.status).toBe(400);
    expect(rest.body.error.code).toBe(2001);
    expect(rest.body.error.errors.join(' ')).toContain(stranger.id);

    const graphql = await h.graphql(DELETE_DELEGATIONS, { input: { userId: stranger.id, types: ['MOBILE'] } }, mine.key);
    expect(graphql.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    expect(graphql.errors?.[0]?.message).toContain(stranger.id);

    expect((await row(strangerMobile.id)).status).toBe('issued');
    expect((await h.rest('get', '/users/me', { key: strangerMobile.key })).status).toBe(200);
  });

  test('permission: the user themself or can_update_user; others and read-only credentials are 403 and change nothing', async () => {
    const account = await h.createAccount();
    const target = await h.createUser(account);
    const colleague = await h.createUser(account, { role: 'user' });
    const admin = await h.createUser(account, { role: 'admin' });
    const readOnlyKey = await h.accountKey(account, { readOnly: true });
    const targetMobile = await issue(target.id, 'mobile');

    for (const key of [colleague.key, readOnlyKey]) {
      const denied = await h.rest('delete', `/oauth_delegations?user_id=${target.id}&type=mobile`, { key });
      expect(denied.status).toBe(403);
      expect(denied.body.error.code).toBe(2010);
    }
    const graphql = await h.graphql(DELETE_DELEGATIONS, { input: { userId: target.id, types: ['MOBILE'] } }, colleague.key);
    expect(graphql.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    expect((await row(targetMobile.id)).status).toBe('issued');

    expect((await h.rest('delete', `/oauth_delegations?user_id=${target.id}&type=mobile`, { key: target.key })).status).toBe(200);
    const second = await issue(target.id, 'mobile');
    expect((await h.rest('delete', `/oauth_delegations?user_id=${target.id}&type=mobile`, { key: admin.key })).status).toBe(200);
    expect((await row(second.id)).status).toBe('revoked');
  });

  test('validation: missing or unsupported parameters and unknown users are 400', async () => {
    const account = await h.createAccount();
    const user = await h.createUser(account);
    const mobile = await issue(user.id, 'mobile');

    const cases: [string, number, string][] = [
      [`/oauth_delegations?type=mobile`, 2003, 'user_id'],
      [`/oauth_delegations?user_id=${user.id}`, 2003, 'type'],
      [`/oauth_delegations?user_id=${user.id}&type=`, 2003, 'type'],
      [`/oauth_delegations?user_id=${user.id}&type=integration`, 2001, 'integration'],
      [`/oauth_delegations?user_id=${user.id}&type=mobile,desktop`, 2001, 'desktop'],
      [`/oauth_delegations?user_id=PNOSUCH&type=mobile`, 2001, 'PNOSUCH'],
      [`/oauth_delegations?user_id=not-an-id&type=web`, 2001, 'not-an-id'],
    ];
    for (const [path, code, named] of cases) {
      const response = await h.rest('delete', path, { key: account.key });
      expect({ path, status: response.status, code: response.body.error?.code }).toEqual({ path, status: 400, code });
      expect(JSON.stringify(response.body.error)).toContain(named);
    }

    const integration = await h.graphql(DELETE_DELEGATIONS, { input: { userId: user.id, types: ['INTEGRATION'] } }, account.key);
    expect(integration.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    const none = await h.graphql(DELETE_DELEGATIONS, { input: { userId: user.id, types: [] } }, account.key);
    expect(none.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');

    expect((await row(mobile.id)).status).toBe('issued');
  });
});

describe('deleting a user', () => {
  test('revokes all of the user\'s delegations in the deleting transaction', async () => {
    const account = await h.createAccount();
    const user = await h.createUser(account);
    const other = await h.createUser(account);
    const tokens = [await issue(user.id, 'mobile'), await issue(user.id, 'web'), await issue(user.id, 'integration')];
    const othersToken = await issue(other.id, 'mobile');

    expect((await h.rest('delete', `/users/${user.id}`, { key: account.key })).status).toBe(204);

    const [deleted] = await h.database.em().execute<{ deleted_at: Date }[]>('select deleted_at from users where id = ?', [user.id]);
    for (const token of tokens) {
      expect(await row(token.id)).toMatchObject({ status: 'revoked', revocation_reason: 'user_deleted', revoked_by_kind: 'account_key' });
      expect((await row(token.id)).revoked_at!.getTime()).toBe(new Date(deleted!.deleted_at).getTime());
      expect((await h.rest('get', '/users/me', { key: token.key })).status).toBe(401);
    }
    expect((await row(othersToken.id)).status).toBe('issued');
  });

  test('through GraphQL as well', async () => {
    const account = await h.createAccount();
    const user = await h.createUser(account);
    const web = await issue(user.id, 'web');
    const result = await h.graphql('mutation ($id: ID!) { deleteUser(input: { id: $id }) { deletedUserId } }', { id: user.id }, account.key);
    expect(result.errors).toBeUndefined();
    expect((await row(web.id)).status).toBe('revoked');
    expect((await h.graphql(VIEWER, {}, web.key)).errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
  });
});
