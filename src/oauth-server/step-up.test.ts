import { describe, expect, test } from '@jest/globals';
import * as client from 'openid-client';
import { CookieJar, PASSWORD, browse, discover, formOf, graphqlCall, newMember, registerApp, signIn, useOAuthServers } from '../../test/support/oauth-server.js';

/**
 * RFC 9470 step-up: a token a browser sign-in obtained manages credentials only while that sign-in
 * is recent (STEP_UP_MAX_AGE_SECONDS, here 2 s); an older one gets 401 with a challenge naming
 * max_age, the app authorizes again with it, the sign-in page asks again inside the live session,
 * and the new token may. A browser app (spa) may hold credentials.* for that, with 10-minute tokens.
 */
const MAX_AGE = 2;
const fixture = useOAuthServers(1, { stepUpMaxAgeSeconds: MAX_AGE });
const first = () => fixture.instances[0]!;
const SPA_REDIRECT = 'https://settings.example.com/callback';
const CREATE_KEY = 'mutation($input: CreateApiKeyInput!) { createApiKey(input: $input) { apiKey { id } } }';
const SCOPE = 'openid users.read credentials.read credentials.write users.write oauth_delegations.read oauth_delegations.write subscribers.read subscribers.write audit_records.read';

async function createKey(accessToken: string, userId: string) {
  const response = await fetch(`${first().url}/graphql`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${accessToken}`, 'Content-Type': 'application/json', Accept: 'application/json' },
    body: JSON.stringify({ query: CREATE_KEY, variables: { input: { kind: 'USER', userId } } }),
  });
  return { status: response.status, challenge: response.headers.get('www-authenticate'), body: await response.json() as { data?: unknown; errors?: Array<{ extensions?: Record<string, unknown> }> } };
}

describe('step-up for credential management from a browser sign-in', () => {
  test('fresh: allowed; stale: 401 insufficient_user_authentication with max_age; after signing in again (max_age, inside the live session): allowed', async () => {
    const m = await newMember(fixture.database);
    const { app } = await registerApp(fixture.database, fixture.serverSecret, { accountId: m.accountId, kind: 'spa', redirectUris: [SPA_REDIRECT], scopes: SCOPE });
    const config = await discover(first().url, app.clientId, client.None());
    const jar = new CookieJar();
    const { tokens } = await signIn({ config, baseUrl: first().url, redirectUri: SPA_REDIRECT, scope: SCOPE, email: m.email, password: PASSWORD, jar });
    expect(tokens.expires_in).toBeLessThanOrEqual(600);
    expect((await createKey(tokens.access_token, m.userId)).status).toBe(200);

    await new Promise((resolve) => setTimeout(resolve, (MAX_AGE + 1) * 1000));
    const stale = await createKey(tokens.access_token, m.userId);
    expect(stale.status).toBe(401);
    expect(stale.challenge).toBe(`Bearer error="insufficient_user_authentication", error_description="A more recent sign-in is required", max_age=${MAX_AGE}`);
    expect(stale.body.errors?.[0]?.extensions).toMatchObject({ code: 'INSUFFICIENT_USER_AUTHENTICATION', maxAge: MAX_AGE });
    // What the token may do without a recent sign-in, it still does.
    const read = await graphqlCall(first(), `Bearer ${tokens.access_token}`, '{ viewer { id } }');
    expect(read.data.viewer.id).toBe(m.userId);

    // The app authorizes again with max_age: inside the live session, the sign-in page asks again.
    const verifier = client.randomPKCECodeVerifier();
    const state = client.randomState();
    const again = await browse(jar, client.buildAuthorizationUrl(config, {
      redirect_uri: SPA_REDIRECT, scope: SCOPE, max_age: String(MAX_AGE), state,
      code_challenge: await client.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256',
    }), SPA_REDIRECT);
    if (again.kind !== 'page') throw new Error('expected the sign-in page, got a code without signing in again');
    expect(again.html).toContain('name="password"');
    const form = formOf(again.html);
    const callback = await browse(jar, new URL(form.action, first().url), SPA_REDIRECT, { method: 'POST', form: { csrf: form.csrf, email: m.email, password: PASSWORD } });
    if (callback.kind !== 'callback') throw new Error(`expected the app's callback, got ${callback.status}`);
    const fresh = await client.authorizationCodeGrant(config, callback.url, { pkceCodeVerifier: verifier, expectedState: state });
    expect((await createKey(fresh.access_token, m.userId)).status).toBe(200);
  }, 30_000);

  test('API keys are not sign-ins: a key manages credentials whatever its age', async () => {
    const m = await newMember(fixture.database);
    await new Promise((resolve) => setTimeout(resolve, (MAX_AGE + 1) * 1000));
    const created = await graphqlCall(first(), `Token token=${m.ownerUserKey}`, 'mutation { createApiKey(input: {kind: ACCOUNT_READ_ONLY}) { apiKey { id } } }');
    expect(created.errors).toBeUndefined();
  }, 30_000);
});
