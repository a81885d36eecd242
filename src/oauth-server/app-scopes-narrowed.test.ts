import { describe, expect, test } from '@jest/globals';
import * as client from 'openid-client';
import { LiveTestClient, sleep } from '../../test/support/live-client.js';
import { api, discover, newMember, registerApp, useOAuthServers } from '../../test/support/oauth-server.js';
import { AppsService } from './apps.service.js';
import { sealersFor } from './provider.js';

const fixture = useOAuthServers();

/**
 * `updateOAuthApp(scopes)` taking a scope away takes it from the tokens already issued too: a token
 * acts with the scopes it was issued and its app still holds, on every request and every open socket.
 */
describe('an app whose scopes are narrowed', () => {
  test('its live tokens lose the scope at once (403 naming it), over HTTP and on an open socket', async () => {
    const m = await newMember(fixture.database);
    const { app, clientSecret } = await registerApp(fixture.database, fixture.serverSecret, { accountId: m.accountId, kind: 'integration', scopes: 'users.read users.write audit_records.read' });
    const config = await discover(fixture.instances[0]!.url, app.clientId, client.ClientSecretBasic(clientSecret!));
    const { access_token: token } = await client.clientCredentialsGrant(config, { scope: 'users.read users.write audit_records.read' });
    const rename = (jobTitle: string) => api(fixture.instances[1]!, 'PUT', `/users/${m.userId}`, `Bearer ${token}`, { user: { job_title: jobTitle } });
    expect((await rename('Before')).status).toBe(200);
    const socket = await LiveTestClient.connect(fixture.instances[1]!.liveServer, `Bearer ${token}`);
    socket.subscribe('audit', 'subscription { auditRecordAdded { kind } }');
    await sleep(100);

    await new AppsService(fixture.database.em(), sealersFor(fixture.serverSecret).clientSecrets, fixture.database.transactions).update(app.clientId, { scopes: 'users.read' });

    const refused = await rename('After');
    expect(refused.status).toBe(403);
    expect(JSON.stringify(refused.body)).toContain('users.write');
    expect((await api(fixture.instances[0]!, 'GET', `/users/${m.userId}`, `Bearer ${token}`)).status).toBe(200);
    // The socket's credential still works with fewer rights: the audit stream it may no longer read ends FORBIDDEN.
    const ended = await socket.waitFor((message) => message.id === 'audit' && message.type === 'error');
    expect(ended.payload[0].extensions.code).toBe('FORBIDDEN');
    socket.close();
  });
});
