import { describe, expect, test } from '@jest/globals';
import * as client from 'openid-client';
import { LiveTestClient, sleep } from '../../test/support/live-client.js';
import { PASSWORD, api, discover, newMember, registerApp, signIn, useOAuthServers } from '../../test/support/oauth-server.js';
import { createAdapterFactory } from './adapter.js';
import { sealersFor } from './provider.js';

const fixture = useOAuthServers();
const MOBILE_REDIRECT = 'http://127.0.0.1/mobile/callback';

/**
 * RFC 7009: when an app revokes one access token, the library also drops every other token of its
 * grant (`revokeByGrantId`), the grant itself staying. Those tokens' sockets must close as the
 * revoked token's does, whatever the order in which the instances see the two writes.
 */
describe('the other tokens of a grant, dropped with a revoked one, reach their sockets', () => {
  async function signedInTwice() {
    const m = await newMember(fixture.database);
    const { app } = await registerApp(fixture.database, fixture.serverSecret, { accountId: m.accountId, kind: 'mobile', redirectUris: [MOBILE_REDIRECT], name: 'Mobile' });
    const config = await discover(fixture.instances[0]!.url, app.clientId, client.None());
    const { tokens } = await signIn({ config, baseUrl: fixture.instances[0]!.url, redirectUri: MOBILE_REDIRECT, scope: 'openid users.read', email: m.email, password: PASSWORD });
    // A refresh: a second access token of the same grant; the first still works.
    const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token!);
    expect((await api(fixture.instances[0]!, 'GET', '/users/me', `Bearer ${tokens.access_token}`)).status).toBe(200);
    return { m, config, first: tokens.access_token, second: refreshed.access_token };
  }

  test('POST /oauth/revoke of one access token: the other one is refused and its socket on another instance closes 4403', async () => {
    const { config, first, second } = await signedInTwice();
    const socket = await LiveTestClient.connect(fixture.instances[1]!.liveServer, `Bearer ${first}`);
    socket.subscribe('revoked', 'subscription { viewerAccessRevoked { reason } }');
    await sleep(100);
    await client.tokenRevocation(config, second, { token_type_hint: 'access_token' });
    expect((await socket.closed).code).toBe(4403);
    expect((await api(fixture.instances[1]!, 'GET', '/users/me', `Bearer ${first}`)).status).toBe(401);
  });

  test('the library dropping a grant\'s access tokens by itself (revokeByGrantId) is announced: their sockets close', async () => {
    const { m, first } = await signedInTwice();
    const socket = await LiveTestClient.connect(fixture.instances[1]!.liveServer, `Bearer ${first}`);
    socket.subscribe('revoked', 'subscription { viewerAccessRevoked { reason } }');
    await sleep(100);
    const [delegation] = await fixture.database.em().execute<{ grant_id: string }[]>('select grant_id from oauth_delegations where user_id = ? and grant_id is not null', [m.userId]);
    const sealers = sealersFor(fixture.serverSecret);
    const Adapter = createAdapterFactory(fixture.database, sealers.records, sealers.clientSecrets);
    await new Adapter('AccessToken').revokeByGrantId(delegation!.grant_id);
    const event = await socket.waitFor((message) => message.id === 'revoked' && message.type === 'next');
    expect(event.payload.data.viewerAccessRevoked.reason).toBe('CREDENTIAL_REVOKED');
    expect((await socket.closed).code).toBe(4403);
  });
});
