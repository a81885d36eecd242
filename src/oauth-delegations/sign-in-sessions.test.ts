import { describe, expect, test } from '@jest/globals';
import * as client from 'openid-client';
import { AccountsService } from '../accounts/accounts.service.js';
import { CookieJar, PASSWORD, api, authorizeAgain, type browse, discover, graphqlCall, newMember, registerApp, signIn, useOAuthServers, type Member } from '../../test/support/oauth-server.js';
import { setPasswordCommand } from '../cli/commands/oauth-server.commands.js';

/** Every path that ends a user's access ends their browsers' sign-in sessions too. */
const fixture = useOAuthServers(1);
const base = () => fixture.instances[0]!.url;
const WEB_REDIRECT = 'https://web.example.com/callback';

/** A user signed in to the web app in a browser (a cookie jar) that is now remembered by the authorization server. */
async function signedInBrowser(role: 'user' | 'admin' = 'user') {
  const member = await newMember(fixture.database, role);
  const { app, clientSecret } = await registerApp(fixture.database, fixture.serverSecret, { accountId: member.accountId, kind: 'web', redirectUris: [WEB_REDIRECT] });
  const config = await discover(base(), app.clientId, client.ClientSecretBasic(clientSecret!));
  const jar = new CookieJar();
  const { tokens } = await signIn({ config, baseUrl: base(), redirectUri: WEB_REDIRECT, scope: 'openid users.read users.write oauth_delegations.read oauth_delegations.write', email: member.email, password: PASSWORD, jar });
  /** The next `GET /oauth/authorize` of that browser: a silent code, or a page. */
  const authorize = () => authorizeAgain(jar, config, WEB_REDIRECT);
  // The session is what lets the browser back in without a password: before any revocation, it does.
  expect((await authorize()).kind).toBe('callback');
  return { member, tokens, authorize };
}

async function expectSignInPage(result: Awaited<ReturnType<typeof browse>>) {
  expect(result).toMatchObject({ kind: 'page', status: 200 });
  if (result.kind === 'page') expect(result.html).toContain('name="password"');
}

async function userKeyOf(member: Member): Promise<string> {
  const { apiKey } = await fixture.database.transactions.run(fixture.database.em(), (tx) => new AccountsService(tx).createApiKey({ accountId: member.accountId, userId: member.userId }));
  return `Token token=${apiKey}`;
}

const UPDATE = 'mutation($input: UpdateUserInput!) { updateUser(input: $input) { user { id active } } }';

describe('ending access ends the browser\'s sign-in session', () => {
  test('DELETE /oauth_delegations?type=web: the same browser gets the sign-in page, not a silent code', async () => {
    const { member, authorize } = await signedInBrowser();
    expect((await api(fixture.instances[0]!, 'DELETE', `/oauth_delegations?user_id=${member.userId}&type=web`, `Token token=${member.ownerKey}`)).status).toBe(200);
    await expectSignInPage(await authorize());
  });

  test('deleteOAuthDelegations by the user\'s own web token (signing out of the web app)', async () => {
    const { member, tokens, authorize } = await signedInBrowser();
    const out = await graphqlCall(fixture.instances[0]!, `Bearer ${tokens.access_token}`, 'mutation($input: DeleteOAuthDelegationsInput!) { deleteOAuthDelegations(input: $input) { revokedCount } }', { input: { userId: member.userId, types: ['MOBILE'] } });
    expect(out.errors).toBeUndefined();
    await expectSignInPage(await authorize());
  });

  test('revoking the web app\'s delegation by id', async () => {
    const { member, authorize } = await signedInBrowser();
    const listed = await api(fixture.instances[0]!, 'GET', `/users/${member.userId}/oauth_delegations`, `Token token=${member.ownerKey}`);
    const id = (listed.body.oauth_delegations as Array<{ id: string; delegation_type: string }>).find((row) => row.delegation_type === 'web')!.id;
    const revoked = await graphqlCall(fixture.instances[0]!, `Token token=${member.ownerKey}`, 'mutation($input: RevokeOAuthDelegationInput!) { revokeOAuthDelegation(input: $input) { oauthDelegation { id status } } }', { input: { userId: member.userId, id } });
    expect(revoked.errors).toBeUndefined();
    await expectSignInPage(await authorize());
  });

  test('suspension, then reactivation: nothing comes back; the sign-in page, never a 500', async () => {
    const { member, authorize } = await signedInBrowser();
    const owner = `Token token=${member.ownerKey}`;
    expect((await graphqlCall(fixture.instances[0]!, owner, UPDATE, { input: { id: member.userId, active: false } })).errors).toBeUndefined();
    await expectSignInPage(await authorize());
    expect((await graphqlCall(fixture.instances[0]!, owner, UPDATE, { input: { id: member.userId, active: true } })).errors).toBeUndefined();
    await expectSignInPage(await authorize());
  });

  test('deletion, a password change and users set-password', async () => {
    const deleted = await signedInBrowser();
    expect((await graphqlCall(fixture.instances[0]!, `Token token=${deleted.member.ownerKey}`, 'mutation($input: DeleteUserInput!) { deleteUser(input: $input) { deletedUserId } }', { input: { id: deleted.member.userId } })).errors).toBeUndefined();
    await expectSignInPage(await deleted.authorize());

    const changed = await signedInBrowser();
    const change = await graphqlCall(fixture.instances[0]!, await userKeyOf(changed.member), 'mutation($input: ChangeMyPasswordInput!) { changeMyPassword(input: $input) { changed } }', { input: { currentPassword: PASSWORD, newPassword: 'another long passphrase here' } });
    expect(change.errors).toBeUndefined();
    await expectSignInPage(await changed.authorize());

    const reset = await signedInBrowser();
    await setPasswordCommand.run(fixture.database, { user: reset.member.userId }, { info: () => {}, readStdin: async () => 'an operator set this passphrase\n' });
    await expectSignInPage(await reset.authorize());
  });

  test('a session that outlived its user\'s suspension or deletion (made before this rule) answers the sign-in page, never a 500', async () => {
    for (const column of ['suspended_at', 'deleted_at']) {
      const { member, authorize } = await signedInBrowser();
      await fixture.database.em().execute(`update users set ${column} = now() where id = ?`, [member.userId]);
      await expectSignInPage(await authorize());
    }
  });
});
