import { describe, expect, test } from '@jest/globals';
import * as client from 'openid-client';
import { CookieJar, PASSWORD, authorizeAgain, discover, newMember, registerApp, signIn, useOAuthServers } from '../../test/support/oauth-server.js';
import { configureSso } from '../../test/support/sso.js';

const fixture = useOAuthServers(1);
const WEB_REDIRECT = 'https://web.example.com/callback';

/**
 * A sign-in session is a password's or a provider's word, kept for 14 days. When the account comes
 * to require single sign-on, a password's word no longer lets that browser in: the browser is asked
 * to sign in again, with the provider.
 */
describe('a password sign-in session once the account requires single sign-on', () => {
  test('the next GET /oauth/authorize shows the sign-in page, not a silent code; without the requirement it stays silent', async () => {
    const m = await newMember(fixture.database);
    const { app, clientSecret } = await registerApp(fixture.database, fixture.serverSecret, { accountId: m.accountId, kind: 'web', redirectUris: [WEB_REDIRECT], name: 'Web' });
    const config = await discover(fixture.instances[0]!.url, app.clientId, client.ClientSecretBasic(clientSecret!));
    const jar = new CookieJar();
    await signIn({ config, baseUrl: fixture.instances[0]!.url, redirectUri: WEB_REDIRECT, scope: 'openid users.read', email: m.email, password: PASSWORD, jar });

    const sso = { accountId: m.accountId, displayName: 'Okta', oidc: { issuer: 'https://idp.example.com', clientId: 'gateway', clientSecret: 'secret-of-the-gateway-0123456789' }, jit: false };
    await configureSso(fixture.database, fixture.serverSecret, { ...sso, requireSso: false });
    expect((await authorizeAgain(jar, config, WEB_REDIRECT)).kind).toBe('callback');

    await configureSso(fixture.database, fixture.serverSecret, { ...sso, requireSso: true });
    const again = await authorizeAgain(jar, config, WEB_REDIRECT);
    expect(again.kind).toBe('page');
    if (again.kind === 'page') {
      expect(again.status).toBe(200);
      expect(again.html).toContain('Sign in with Okta');
      expect(again.html).not.toContain('name="password"');
    }
  });
});
