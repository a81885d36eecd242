import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { startHarness, type Harness } from '../../test/support/harness.js';
import { issueDelegation } from './oauth-delegation.issuing.js';

/** Issue 22, finding 2: every user-bound grant, a third-party app's included, is revocable by the user and by can_update_user. */
let h: Harness;

beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h.close();
});

/** A third-party app's grant is recorded as an `integration` delegation acting as the user. */
const thirdPartyGrant = (userId: string) => h.database.transactions.run(h.database.em(), (tx) => issueDelegation(tx, { userId, type: 'integration', scopes: 'users.read', clientId: 'partner-app' }));

describe('DELETE /users/{id}/oauth_delegations/{delegation_id}', () => {
  test('the user themself revokes a third-party grant: 204, its token is refused at once, the listing shows it revoked', async () => {
    const account = await h.createAccount();
    const user = await h.createUser(account, { role: 'read_only_user' });
    const grant = await thirdPartyGrant(user.id);
    const own = await h.database.transactions.run(h.database.em(), (tx) => issueDelegation(tx, { userId: user.id, type: 'web', scopes: 'oauth_delegations.read oauth_delegations.write' }));
    expect((await h.rest('get', '/users/me', { key: { bearer: grant.accessToken } })).status).toBe(200);

    const listed = await h.rest('get', `/users/${user.id}/oauth_delegations?delegation_type=integration`, { key: { bearer: own.accessToken } });
    expect(listed.body.oauth_delegations.map((delegation: { id: string }) => delegation.id)).toEqual([grant.delegation.id]);

    const revoked = await h.rest('delete', `/users/${user.id}/oauth_delegations/${grant.delegation.id}`, { key: { bearer: own.accessToken } });
    expect(revoked.status).toBe(204);
    expect((await h.rest('get', '/users/me', { key: { bearer: grant.accessToken } })).status).toBe(401);
    const shown = await h.rest('get', `/users/${user.id}/oauth_delegations/${grant.delegation.id}`, { key: { bearer: own.accessToken } });
    expect(shown.body.oauth_delegation.status).toBe('revoked');
    // Again: nothing left to do, same answer; the caller's own token still works.
    expect((await h.rest('delete', `/users/${user.id}/oauth_delegations/${grant.delegation.id}`, { key: { bearer: own.accessToken } })).status).toBe(204);
    expect((await h.rest('get', `/users/${user.id}/oauth_delegations`, { key: { bearer: own.accessToken } })).status).toBe(200);
  });

  test('can_update_user may revoke anyone\'s; other users, read-only account keys and tokens without oauth_delegations.write may not', async () => {
    const account = await h.createAccount();
    const user = await h.createUser(account);
    const other = await h.createUser(account);
    const admin = await h.createUser(account, { role: 'admin' });
    const grant = await thirdPartyGrant(user.id);
    const path = `/users/${user.id}/oauth_delegations/${grant.delegation.id}`;

    expect((await h.rest('delete', path, { key: other.key })).status).toBe(403);
    expect((await h.rest('delete', path, { key: await h.accountKey(account, { readOnly: true }) })).status).toBe(403);
    const readScoped = await h.database.transactions.run(h.database.em(), (tx) => issueDelegation(tx, { userId: user.id, type: 'mobile', scopes: 'oauth_delegations.read' }));
    const withoutScope = await h.rest('delete', path, { key: { bearer: readScoped.accessToken } });
    expect(withoutScope.status).toBe(403);
    expect(JSON.stringify(withoutScope.body)).toContain('oauth_delegations.write');
    expect((await h.rest('get', '/users/me', { key: { bearer: grant.accessToken } })).status).toBe(200);

    expect((await h.rest('delete', path, { key: admin.key })).status).toBe(204);
    expect((await h.rest('get', '/users/me', { key: { bearer: grant.accessToken } })).status).toBe(401);
  });

  test('another user\'s or account\'s delegation, or an id that is not a uuid: 404', async () => {
    const account = await h.createAccount();
    const user = await h.createUser(account);
    const other = await h.createUser(account);
    const othersGrant = await thirdPartyGrant(other.id);
    const elsewhere = await h.createAccount();
    const foreignUser = await h.createUser(elsewhere);
    const foreignGrant = await thirdPartyGrant(foreignUser.id);

    expect((await h.rest('delete', `/users/${user.id}/oauth_delegations/${othersGrant.delegation.id}`, { key: account.key })).status).toBe(404);
    expect((await h.rest('delete', `/users/${foreignUser.id}/oauth_delegations/${foreignGrant.delegation.id}`, { key: account.key })).status).toBe(404);
    expect((await h.rest('delete', `/users/${user.id}/oauth_delegations/not-a-uuid`, { key: account.key })).status).toBe(404);
    expect((await h.rest('get', '/users/me', { key: { bearer: othersGrant.accessToken } })).status).toBe(200);
    expect((await h.rest('get', '/users/me', { key: { bearer: foreignGrant.accessToken } })).status).toBe(200);
  });

  test('GraphQL: revokeOAuthDelegation answers the revoked delegation', async () => {
    const account = await h.createAccount();
    const user = await h.createUser(account);
    const grant = await thirdPartyGrant(user.id);
    const result = await h.graphql(
      'mutation($input: RevokeOAuthDelegationInput!) { revokeOAuthDelegation(input: $input) { oauthDelegation { id status delegationType } } }',
      { input: { userId: user.id, id: grant.delegation.id } },
      user.key,
    );
    expect(result.data).toEqual({ revokeOAuthDelegation: { oauthDelegation: { id: grant.delegation.id, status: 'REVOKED', delegationType: 'INTEGRATION' } } });
    expect((await h.rest('get', '/users/me', { key: { bearer: grant.accessToken } })).status).toBe(401);
  });
});
