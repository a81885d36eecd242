import { describe, expect, test } from '@jest/globals';
import * as client from 'openid-client';
import { CookieJar, PASSWORD, authorizeAgain, discover, newMember, registerApp, signIn, useOAuthServers, type Member } from '../../test/support/oauth-server.js';

/**
 * "This device" from a token alone, as a browser app on another origin sends no cookie to the API:
 * a token remembers the sign-in session it came from, so its session and its delegation are
 * `current`, and `allButCurrent` keeps that browser signed in.
 */
const fixture = useOAuthServers(1);
const base = () => fixture.instances[0]!.url;
const SPA_REDIRECT = 'https://settings.example.com/callback';
const SCOPE = 'openid users.read oauth_delegations.read oauth_delegations.write';
const PAGE = 'query($id: ID!) { user(id: $id) { signInSessions { id current } oauthDelegations { nodes { id current } } } }';

/** A browser (its own cookie jar) signed in to a browser app as the member: the token, and its next authorization. */
async function browserOf(member: Member, clientId: string) {
  const config = await discover(base(), clientId, client.None());
  const jar = new CookieJar();
  const { tokens } = await signIn({ config, baseUrl: base(), redirectUri: SPA_REDIRECT, scope: SCOPE, email: member.email, password: PASSWORD, jar });
  return { bearer: `Bearer ${tokens.access_token}`, tokens, config, authorize: () => authorizeAgain(jar, config, SPA_REDIRECT) };
}

/** Whether the browser is still signed in: its next authorization goes straight back to the app, not to the sign-in page. */
async function signedIn(browser: Awaited<ReturnType<typeof browserOf>>): Promise<boolean> {
  const next = await browser.authorize();
  if (next.kind === 'callback') return true;
  expect(next.kind === 'page' && next.html.includes('name="password"')).toBe(true);
  return false;
}

/** A GraphQL call with the token alone: no cookie, as from another origin. */
async function call(authorization: string, query: string, variables: Record<string, unknown>) {
  const response = await fetch(`${base()}/graphql`, { method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: authorization }, body: JSON.stringify({ query, variables }) });
  return await response.json() as { data?: any; errors?: unknown[] };
}

describe('this device, from the token alone', () => {
  test('the token\'s own session and delegation are current; allButCurrent ends the other browser and keeps this one', async () => {
    const m = await newMember(fixture.database);
    const { app } = await registerApp(fixture.database, fixture.serverSecret, { accountId: m.accountId, kind: 'spa', redirectUris: [SPA_REDIRECT], scopes: SCOPE });
    const laptop = await browserOf(m, app.clientId);
    const phone = await browserOf(m, app.clientId);

    const page = (await call(laptop.bearer, PAGE, { id: m.userId })).data.user;
    expect(page.signInSessions).toHaveLength(2);
    expect(page.signInSessions.filter((session: { current: boolean }) => session.current)).toHaveLength(1);
    expect(page.oauthDelegations.nodes.filter((delegation: { current: boolean }) => delegation.current)).toHaveLength(1);
    const fromPhone = (await call(phone.bearer, PAGE, { id: m.userId })).data.user;
    const current = (sessions: Array<{ id: string; current: boolean }>) => sessions.find((session) => session.current)!.id;
    expect(current(fromPhone.signInSessions)).not.toBe(current(page.signInSessions));

    const ended = await call(laptop.bearer, 'mutation($input: RevokeSignInSessionsInput!) { revokeSignInSessions(input: $input) { revokedCount revokedSessionIds } }', { input: { userId: m.userId, allButCurrent: true } });
    expect(ended.data.revokeSignInSessions).toEqual({ revokedCount: 1, revokedSessionIds: [current(fromPhone.signInSessions)] });
    expect((await laptop.authorize()).kind).toBe('callback');
    const phoneAgain = await phone.authorize();
    expect(phoneAgain.kind === 'page' && phoneAgain.html.includes('name="password"')).toBe(true);
  });

  test('an API key has no device: nothing is current', async () => {
    const m = await newMember(fixture.database);
    const { app } = await registerApp(fixture.database, fixture.serverSecret, { accountId: m.accountId, kind: 'spa', redirectUris: [SPA_REDIRECT], scopes: SCOPE });
    await browserOf(m, app.clientId);
    const page = (await call(`Token token=${m.ownerKey}`, PAGE, { id: m.userId })).data.user;
    expect(page.signInSessions.map((session: { current: boolean }) => session.current)).toEqual([false]);
    expect(page.oauthDelegations.nodes.every((delegation: { current: boolean }) => !delegation.current)).toBe(true);
  });

  test('signing out of this browser (revoking its own delegation) ends this browser only', async () => {
    const m = await newMember(fixture.database);
    const { app } = await registerApp(fixture.database, fixture.serverSecret, { accountId: m.accountId, kind: 'spa', redirectUris: [SPA_REDIRECT], scopes: SCOPE });
    const laptop = await browserOf(m, app.clientId);
    const phone = await browserOf(m, app.clientId);
    const mine = (await call(laptop.bearer, PAGE, { id: m.userId })).data.user.oauthDelegations.nodes.find((delegation: { current: boolean }) => delegation.current).id as string;

    const signedOut = await call(laptop.bearer, 'mutation($input: RevokeOAuthDelegationInput!) { revokeOAuthDelegation(input: $input) { oauthDelegation { id status } } }', { input: { id: mine, userId: m.userId } });
    expect(signedOut.errors).toBeUndefined();
    expect(await signedIn(laptop)).toBe(false);
    expect((await call(laptop.bearer, '{ viewer { id } }', {})).errors).toBeDefined();
    // The phone's session and token are untouched.
    expect(await signedIn(phone)).toBe(true);
    const fromPhone = await call(phone.bearer, PAGE, { id: m.userId });
    expect(fromPhone.errors).toBeUndefined();
    expect(fromPhone.data.user.signInSessions).toHaveLength(1);
  });

  test('an app revoking its refresh token (RFC 7009) signs that browser out, and only it', async () => {
    const m = await newMember(fixture.database);
    const { app } = await registerApp(fixture.database, fixture.serverSecret, { accountId: m.accountId, kind: 'spa', redirectUris: [SPA_REDIRECT], scopes: SCOPE });
    const laptop = await browserOf(m, app.clientId);
    const phone = await browserOf(m, app.clientId);
    expect(laptop.tokens.refresh_token).toBeDefined();

    await client.tokenRevocation(laptop.config, laptop.tokens.refresh_token!);
    expect(await signedIn(laptop)).toBe(false);
    expect(await signedIn(phone)).toBe(true);
    expect((await call(phone.bearer, '{ viewer { id } }', {})).errors).toBeUndefined();
  });
});
