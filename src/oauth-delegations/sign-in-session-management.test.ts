import { describe, expect, test } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import * as client from 'openid-client';
import { Account } from '../accounts/account.entity.js';
import { User } from '../users/user.entity.js';
import { AccountsService } from '../accounts/accounts.service.js';
import { digestSecret } from '../auth/secrets.js';
import { CookieJar, PASSWORD, authorizeAgain, browse, discover, newMember, registerApp, signIn, useOAuthServers, type Member } from '../../test/support/oauth-server.js';

/** A user's sign-in sessions can be seen (`User.signInSessions`) and ended (`revokeSignInSessions`). */
const fixture = useOAuthServers(1);
const base = () => fixture.instances[0]!.url;
const WEB_REDIRECT = 'https://web.example.com/callback';
const SESSION_SCOPES = 'openid users.read oauth_delegations.read oauth_delegations.write';

const SESSIONS = 'query($id: ID!) { user(id: $id) { id signInSessions { id createdAt lastActiveAt expiresAt method identityProvider userAgent remoteAddress current } } }';
const REVOKE = 'mutation($input: RevokeSignInSessionsInput!) { revokeSignInSessions(input: $input) { revokedCount } }';

interface SessionView {
  id: string;
  createdAt: string;
  lastActiveAt: string;
  expiresAt: string;
  method: string;
  identityProvider: string | null;
  userAgent: string | null;
  remoteAddress: string | null;
  current: boolean;
}

/** A GraphQL call as a browser makes it: its credential, and (when given) its cookies for the API's origin. */
async function call(authorization: string, query: string, variables: Record<string, unknown>, jar?: CookieJar) {
  const url = new URL('/graphql', base());
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: authorization, ...(jar ? { cookie: jar.header(url) } : {}) },
    body: JSON.stringify({ query, variables }),
  });
  return await response.json() as { data?: any; errors?: Array<{ message: string; path?: string[]; extensions?: { code?: string } }> };
}

/** One browser (cookie jar) signed in to the web app as `member`: its tokens and its next `GET /oauth/authorize`. */
async function browserOf(member: Member, scope = SESSION_SCOPES) {
  const { app, clientSecret } = await registerApp(fixture.database, fixture.serverSecret, { accountId: member.accountId, kind: 'web', redirectUris: [WEB_REDIRECT] });
  const config = await discover(base(), app.clientId, client.ClientSecretBasic(clientSecret!));
  const jar = new CookieJar();
  const { tokens } = await signIn({ config, baseUrl: base(), redirectUri: WEB_REDIRECT, scope, email: member.email, password: PASSWORD, jar });
  const authorize = () => authorizeAgain(jar, config, WEB_REDIRECT);
  return { jar, config, bearer: `Bearer ${tokens.access_token}`, authorize };
}

async function userKey(member: { accountId: string }, userId: string): Promise<string> {
  const { apiKey } = await fixture.database.transactions.run(fixture.database.em(), (tx) => new AccountsService(tx).createApiKey({ accountId: member.accountId, userId }));
  return `Token token=${apiKey}`;
}

async function anotherUser(member: Member, role: 'user' | 'admin'): Promise<string> {
  const em = fixture.database.em();
  const user = em.create(User, { account: em.getReference(Account, member.accountId), name: 'Other', email: `other-${randomUUID().slice(0, 8)}@example.com`, timeZone: 'Etc/UTC', color: 'red', role });
  await em.persist(user).flush();
  return user.id;
}

async function sessionsOf(member: Member): Promise<SessionView[]> {
  const listed = await call(`Token token=${member.ownerKey}`, SESSIONS, { id: member.userId });
  expect(listed.errors).toBeUndefined();
  return listed.data.user.signInSessions;
}

async function expectSignInPage(result: Awaited<ReturnType<typeof browse>>) {
  expect(result).toMatchObject({ kind: 'page', status: 200 });
  if (result.kind === 'page') expect(result.html).toContain('name="password"');
}

/** The user's session records left at the authorization server. */
async function sessionRecords(userId: string): Promise<number> {
  const [row] = await fixture.database.em().execute<{ count: string }[]>(`select count(*) as count from oauth_server_records where model = 'Session' and user_id = ?`, [userId]);
  return Number(row!.count);
}

describe('User.signInSessions', () => {
  test('lists each browser\'s session with how, when and from where it signed in; current only for the browser asking, by its cookie or its token', async () => {
    const member = await newMember(fixture.database);
    const first = await browserOf(member);
    const second = await browserOf(member);

    const fromFirst = await call(first.bearer, SESSIONS, { id: member.userId }, first.jar);
    expect(fromFirst.errors).toBeUndefined();
    const sessions = fromFirst.data.user.signInSessions as SessionView[];
    expect(sessions).toHaveLength(2);
    for (const session of sessions) {
      expect(session).toMatchObject({ method: 'PASSWORD', identityProvider: null, userAgent: 'node', remoteAddress: expect.stringMatching(/127\.0\.0\.1$/) });
      expect(Date.parse(session.createdAt)).toBeLessThanOrEqual(Date.parse(session.lastActiveAt));
      expect(Date.parse(session.expiresAt)).toBeGreaterThan(Date.now() + 24 * 3600 * 1000);
    }
    expect(sessions.filter((session) => session.current)).toHaveLength(1);

    // The other browser sees the other session as its own.
    const fromSecond = (await call(second.bearer, SESSIONS, { id: member.userId }, second.jar)).data.user.signInSessions as SessionView[];
    const currentOf = (list: SessionView[]) => list.find((session) => session.current)!.id;
    expect(currentOf(fromSecond)).not.toBe(currentOf(sessions));
    expect(new Set(fromSecond.map((session) => session.id))).toEqual(new Set(sessions.map((session) => session.id)));

    // A bearer token alone (no cookie, as from another origin) remembers the session it came from.
    const tokenAlone = (await call(first.bearer, SESSIONS, { id: member.userId })).data.user.signInSessions as SessionView[];
    expect(currentOf(tokenAlone)).toBe(currentOf(sessions));
    // An API key is no browser: nothing is current.
    const byKey = await call(`Token token=${member.ownerKey}`, SESSIONS, { id: member.userId }, undefined);
    expect(byKey.errors).toBeUndefined();
    expect((byKey.data.user.signInSessions as SessionView[]).map((session) => session.current)).toEqual([false, false]);

    // The id is no secret: neither the cookie's value nor its digest.
    const cookieValue = /oauth_session=([^;]+)/.exec(first.jar.header(new URL('/oauth/auth', base())))![1]!;
    for (const session of sessions) expect([cookieValue, digestSecret(cookieValue)]).not.toContain(session.id);
  });

  test('rights: the user themself and can_update_user; another member, a token without oauth_delegations.read and another account are refused', async () => {
    const member = await newMember(fixture.database);
    await browserOf(member);
    const expectListed = async (authorization: string) => {
      const listed = await call(authorization, SESSIONS, { id: member.userId });
      expect(listed.errors).toBeUndefined();
      expect(listed.data.user.signInSessions).toHaveLength(1);
    };
    await expectListed(await userKey(member, member.userId));
    await expectListed(await userKey(member, await anotherUser(member, 'admin')));

    const expectForbiddenField = async (authorization: string) => {
      const listed = await call(authorization, SESSIONS, { id: member.userId });
      // Only the field is lost: the user is still answered.
      expect(listed.data.user).toEqual({ id: member.userId, signInSessions: null });
      expect(listed.errors).toEqual([expect.objectContaining({ path: ['user', 'signInSessions'], extensions: expect.objectContaining({ code: 'FORBIDDEN' }) })]);
    };
    await expectForbiddenField(await userKey(member, await anotherUser(member, 'user')));
    await expectForbiddenField((await browserOf(member, 'openid users.read')).bearer);

    const stranger = await newMember(fixture.database);
    const foreign = await call(`Token token=${stranger.ownerKey}`, SESSIONS, { id: member.userId });
    expect(foreign.data?.user ?? null).toBeNull();
    expect(foreign.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
  });
});

describe('revokeSignInSessions', () => {
  test('one session by id: that browser gets the sign-in page, the other keeps its session; audited', async () => {
    const member = await newMember(fixture.database);
    const first = await browserOf(member);
    const second = await browserOf(member);
    const firstId = ((await call(first.bearer, SESSIONS, { id: member.userId }, first.jar)).data.user.signInSessions as SessionView[]).find((session) => session.current)!.id;

    const revoked = await call(`Token token=${member.ownerKey}`, REVOKE, { input: { userId: member.userId, ids: [firstId] } });
    expect(revoked).toEqual({ data: { revokeSignInSessions: { revokedCount: 1 } } });
    await expectSignInPage(await first.authorize());
    expect((await second.authorize()).kind).toBe('callback');
    expect((await sessionsOf(member)).map((session) => session.id)).not.toContain(firstId);

    const [record] = await fixture.database.em().execute<{ action: string; body: unknown }[]>(
      `select action, body from audit_records where account_id = ? and root_resource_id = ? and action = 'revoke' order by position desc limit 1`,
      [member.accountId, member.userId],
    );
    const body = typeof record!.body === 'string' ? JSON.parse(record!.body) : record!.body;
    expect(JSON.stringify(body)).toContain(firstId);
    expect(JSON.stringify(body)).toContain('sign_in_sessions');

    // The answer names the sessions it ended, so a client can drop them from its page.
    const secondId = ((await call(second.bearer, SESSIONS, { id: member.userId }, second.jar)).data.user.signInSessions as SessionView[]).find((session) => session.current)!.id;
    const named = await call(`Token token=${member.ownerKey}`, 'mutation($input: RevokeSignInSessionsInput!) { revokeSignInSessions(input: $input) { revokedCount revokedSessionIds } }', { input: { userId: member.userId, ids: [secondId] } });
    expect(named).toEqual({ data: { revokeSignInSessions: { revokedCount: 1, revokedSessionIds: [secondId] } } });
  });

  test('a code the ended session issued and nobody redeemed yet is refused', async () => {
    const member = await newMember(fixture.database);
    const browser = await browserOf(member);
    const verifier = client.randomPKCECodeVerifier();
    const state = client.randomState();
    const issued = await browse(browser.jar, client.buildAuthorizationUrl(browser.config, {
      redirect_uri: WEB_REDIRECT, scope: 'openid users.read', code_challenge: await client.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', state,
    }), WEB_REDIRECT);
    expect(issued.kind).toBe('callback');

    const revoked = await call(`Token token=${member.ownerKey}`, REVOKE, { input: { userId: member.userId } });
    expect(revoked).toEqual({ data: { revokeSignInSessions: { revokedCount: 1 } } });
    await expect(client.authorizationCodeGrant(browser.config, issued.url, { pkceCodeVerifier: verifier, expectedState: state })).rejects.toMatchObject({ error: 'invalid_grant' });
  });

  test('allButCurrent keeps the asking browser\'s session; without ids, every session ends', async () => {
    const member = await newMember(fixture.database);
    const first = await browserOf(member);
    const second = await browserOf(member);
    const kept = await call(first.bearer, REVOKE, { input: { userId: member.userId, allButCurrent: true } }, first.jar);
    expect(kept).toEqual({ data: { revokeSignInSessions: { revokedCount: 1 } } });
    await expectSignInPage(await second.authorize());
    expect((await first.authorize()).kind).toBe('callback');

    const third = await browserOf(member);
    const all = await call(first.bearer, REVOKE, { input: { userId: member.userId } }, first.jar);
    expect(all).toEqual({ data: { revokeSignInSessions: { revokedCount: 2 } } });
    await expectSignInPage(await first.authorize());
    await expectSignInPage(await third.authorize());
    expect(await sessionsOf(member)).toEqual([]);
  });

  test('bad input and refused callers change nothing', async () => {
    const member = await newMember(fixture.database);
    const browser = await browserOf(member);
    const [session] = await sessionsOf(member);
    const other = await newMember(fixture.database);
    await browserOf(other);
    const [othersSession] = await sessionsOf(other);
    const owner = `Token token=${member.ownerKey}`;
    const codeOf = async (authorization: string, input: Record<string, unknown>) => (await call(authorization, REVOKE, { input })).errors?.[0]?.extensions?.code;

    expect(await codeOf(owner, { userId: member.userId, ids: [session!.id], allButCurrent: true })).toBe('BAD_USER_INPUT');
    expect(await codeOf(owner, { userId: member.userId, ids: [] })).toBe('BAD_USER_INPUT');
    expect(await codeOf(owner, { userId: member.userId, ids: [session!.id, '6f1c5a52-0000-4000-8000-000000000000'] })).toBe('NOT_FOUND');
    expect(await codeOf(owner, { userId: member.userId, ids: [session!.id, othersSession!.id] })).toBe('NOT_FOUND');
    expect(await codeOf(owner, { userId: other.userId, ids: [othersSession!.id] })).toBe('NOT_FOUND');
    expect(await codeOf(await userKey(member, await anotherUser(member, 'user')), { userId: member.userId })).toBe('FORBIDDEN');
    expect(await codeOf((await browserOf(member, 'openid users.read oauth_delegations.read')).bearer, { userId: member.userId })).toBe('FORBIDDEN');

    expect((await browser.authorize()).kind).toBe('callback');
    expect(await sessionRecords(member.userId)).toBe(2);
    expect(await sessionRecords(other.userId)).toBe(1);
    // The user themself may end their own.
    expect(await codeOf(await userKey(member, member.userId), { userId: member.userId, ids: [session!.id] })).toBeUndefined();
    await expectSignInPage(await browser.authorize());
  });
});
