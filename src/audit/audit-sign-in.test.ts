import { describe, expect, test } from '@jest/globals';
import * as client from 'openid-client';
import { CookieJar, PASSWORD, browse, discover, formOf, graphqlCall, newMember, registerApp, signIn, useOAuthServers } from '../../test/support/oauth-server.js';
import { sealersFor } from '../oauth-server/provider.js';
import { AppsService } from '../oauth-server/apps.service.js';

const fixture = useOAuthServers(1);
const MOBILE_REDIRECT = 'http://127.0.0.1/mobile/callback';

interface Row {
  action: string;
  root_resource_type: string;
  root_resource_id: string;
  method_type: string;
  method_truncated_token: string | null;
  body: { actors: Array<{ id: string; type: string }>; executionContext: { remoteAddress: string | null }; details: { resource: { type: string }; references: Array<{ removed: Array<{ id: string }> | null }> } };
  text: string;
}

async function recordsOf(accountId: string, afterPosition = 0): Promise<Row[]> {
  const rows = await fixture.database.em().execute<Row[]>(
    `select action, root_resource_type, root_resource_id, method_type, method_truncated_token, body, body::text as text
       from audit_records where account_id = ? and position > ? order by position`,
    [accountId, afterPosition],
  );
  return rows.map((row) => ({ ...row, body: typeof row.body === 'string' ? JSON.parse(row.body) : row.body }));
}

async function lastPosition(accountId: string): Promise<number> {
  const [row] = await fixture.database.em().execute<{ position: string | number }[]>('select coalesce(max(position), 0) as position from audit_records where account_id = ?', [accountId]);
  return Number(row!.position);
}

describe('the authorization server\'s writes are recorded', () => {
  test('failed sign-ins, a sign-in and its consent, a password change, an app deleted: one record each, nothing secret', async () => {
    const m = await newMember(fixture.database);
    const { app } = await registerApp(fixture.database, fixture.serverSecret, { accountId: m.accountId, kind: 'mobile', redirectUris: [MOBILE_REDIRECT], name: 'Audited Mobile' });
    const config = await discover(fixture.instances[0]!.url, app.clientId, client.None());
    let mark = await lastPosition(m.accountId);

    const jar = new CookieJar();
    const url = client.buildAuthorizationUrl(config, { redirect_uri: MOBILE_REDIRECT, scope: 'users.read', code_challenge: await client.calculatePKCECodeChallenge(client.randomPKCECodeVerifier()), code_challenge_method: 'S256' });
    const page = await browse(jar, url, MOBILE_REDIRECT);
    if (page.kind !== 'page') throw new Error('expected the sign-in page');
    const form = formOf(page.html);
    const submit = (fields: Record<string, string>) => browse(jar, new URL(form.action, fixture.instances[0]!.url), MOBILE_REDIRECT, { method: 'POST', form: { csrf: form.csrf, ...fields } });
    const wrongPassword = 'typed the wrong secret here';
    expect((await submit({ email: m.email, password: wrongPassword })).kind).toBe('page');
    expect((await submit({ email: 'nobody-here@example.com', password: wrongPassword })).kind).toBe('page');
    const failures = await recordsOf(m.accountId, mark);
    expect(failures.map((row) => [row.action, row.root_resource_type, row.root_resource_id, row.method_type, row.method_truncated_token])).toEqual([
      ['sign_in_failed', 'user', m.userId, 'browser', null],
      ['sign_in_failed', 'app', app.clientId, 'browser', null],
    ]);
    expect(failures[0]!.body.executionContext.remoteAddress).toBeTruthy();
    mark = await lastPosition(m.accountId);

    const { tokens } = await signIn({ config, baseUrl: fixture.instances[0]!.url, redirectUri: MOBILE_REDIRECT, scope: 'openid users.read users.write', email: m.email, password: PASSWORD });
    const signedIn = await recordsOf(m.accountId, mark);
    expect(signedIn.map((row) => [row.action, row.root_resource_id, row.method_type, row.body.details.resource.type])).toEqual([
      ['sign_in', m.userId, 'browser', 'user_reference'],
      ['create', m.userId, 'browser', 'oauth_delegation_reference'],
    ]);
    expect(signedIn.every((row) => row.body.actors[0]?.id === m.userId)).toBe(true);
    mark = await lastPosition(m.accountId);

    const newPassword = 'an entirely new passphrase 42';
    const changed = await graphqlCall(fixture.instances[0]!, `Bearer ${tokens.access_token}`, 'mutation($input: ChangeMyPasswordInput!) { changeMyPassword(input: $input) { changed } }', { input: { currentPassword: PASSWORD, newPassword } });
    expect(changed.errors).toBeUndefined();
    const [passwordChange, ...more] = await recordsOf(m.accountId, mark);
    // The change kept the token making it, and ended the browser's sign-in session: one record of that.
    expect(more.map((row) => [row.action, row.root_resource_id, (row.body.details as unknown as { fields: Array<{ name: string }> }).fields.map((field) => field.name)])).toEqual([
      ['revoke', m.userId, ['revocation_reason', 'sign_in_sessions']],
    ]);
    expect(passwordChange).toMatchObject({ action: 'change_password', root_resource_id: m.userId, method_type: 'oauth', method_truncated_token: tokens.access_token.slice(-4) });
    mark = await lastPosition(m.accountId);

    await new AppsService(fixture.database.em(), sealersFor(fixture.serverSecret).clientSecrets, fixture.database.transactions).delete(app.clientId);
    const deletion = await recordsOf(m.accountId, mark);
    expect(deletion.map((row) => [row.action, row.root_resource_type])).toEqual([['delete', 'app'], ['revoke', 'user']]);
    expect(deletion[1]!.body.details.references[0]!.removed).toHaveLength(1);

    const everything = (await recordsOf(m.accountId)).map((row) => row.text).join('\n');
    for (const secret of [PASSWORD, newPassword, wrongPassword, tokens.access_token, tokens.refresh_token!, 'nobody-here@example.com']) expect(everything).not.toContain(secret);
  });
});
