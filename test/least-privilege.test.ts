import { describe, expect, test } from '@jest/globals';
import * as client from 'openid-client';
import { issueDelegation } from '../src/oauth-delegations/oauth-delegation.service.js';
import { User } from '../src/users/user.entity.js';
import { Account } from '../src/accounts/account.entity.js';
import { api, discover, graphqlCall, newMember, registerApp, useOAuthServers } from './support/oauth-server.js';

/** Issue 22, findings 4 and 6: an app's rights derive from its scopes; `oauthApps` needs a scope. */
const fixture = useOAuthServers(1);

async function integrationToken(accountId: string, scopes: string): Promise<string> {
  const { app, clientSecret } = await registerApp(fixture.database, fixture.serverSecret, { accountId, kind: 'integration', scopes });
  const config = await discover(fixture.instances[0]!.url, app.clientId, client.ClientSecretBasic(clientSecret!));
  return (await client.clientCredentialsGrant(config, { scope: scopes })).access_token;
}

describe('an integration app (client credentials) has the rights of its scopes, no more', () => {
  test('users.read reads users but not their calendar URLs (credentials); users.write does', async () => {
    const m = await newMember(fixture.database);
    const reader = `Bearer ${await integrationToken(m.accountId, 'users.read subscribers.read')}`;
    const field = await graphqlCall(fixture.instances[0]!, reader, 'query($id: ID!) { user(id: $id) { id httpCalUrl } }', { id: m.userId });
    expect(field.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    expect((await api(fixture.instances[0]!, 'GET', `/users/${m.userId}?include[]=calendar_urls`, reader)).status).toBe(403);
    const shown = await api(fixture.instances[0]!, 'GET', `/users/${m.userId}`, reader);
    expect(shown.status).toBe(200);
    expect(shown.body.user).not.toHaveProperty('http_cal_url');
    // Its other scope is its right over every user of the account.
    expect((await api(fixture.instances[0]!, 'GET', `/users/${m.userId}/notification_subscriptions`, reader)).status).toBe(200);
    // No write scope: read-only.
    expect((await api(fixture.instances[0]!, 'PUT', `/users/${m.userId}`, reader, { user: { job_title: 'x' } })).status).toBe(403);

    const manager = `Bearer ${await integrationToken(m.accountId, 'users.read users.write')}`;
    expect((await api(fixture.instances[0]!, 'GET', `/users/${m.userId}?include[]=calendar_urls`, manager)).body.user.http_cal_url).toMatch(/\/private\/[^/]+\/feed$/);
  });
});

describe('oauthApps', () => {
  test('a token needs oauth_delegations.read (and its user can_update_user); users.read alone is refused naming the scope', async () => {
    const m = await newMember(fixture.database);
    const em = fixture.database.em();
    const admin = em.create(User, { account: em.getReference(Account, m.accountId), name: 'Admin', email: `admin-${m.userId}@example.com`, timeZone: 'Etc/UTC', color: 'green', role: 'admin' });
    await em.persist(admin).flush();
    const usersOnly = await fixture.database.transactions.run(em, (tx) => issueDelegation(tx, { userId: admin.id, type: 'web', scopes: 'users.read' }));
    const refused = await graphqlCall(fixture.instances[0]!, `Bearer ${usersOnly.accessToken}`, '{ oauthApps { clientId } }');
    expect(refused.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    expect(refused.errors?.[0]?.message).toContain('oauth_delegations.read');
    const scoped = await fixture.database.transactions.run(em, (tx) => issueDelegation(tx, { userId: admin.id, type: 'web', scopes: 'oauth_delegations.read' }));
    expect((await graphqlCall(fixture.instances[0]!, `Bearer ${scoped.accessToken}`, '{ oauthApps { clientId } }')).data).toEqual({ oauthApps: [] });
    expect((await graphqlCall(fixture.instances[0]!, `Token token=${m.ownerKey}`, '{ oauthApps { clientId } }')).data).toEqual({ oauthApps: [] });
  });
});
