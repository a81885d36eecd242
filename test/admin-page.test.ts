import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { startHarness, type Harness } from './support/harness.js';

/** An admin page asks for roots with rights of their own beside the users: one forbidden root is null with its error, the rest is served. */
let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => h.close());

const PAGE = `{ users(first: 5) { totalCount }
  provisioningTokens { id } singleSignOn { id } apiKeys { totalCount } oauthApps { clientId } auditRecords { nodes { id } } }`;

describe('an admin page with a member\'s credential', () => {
  test('each forbidden root is null with its FORBIDDEN error; users are served', async () => {
    const account = await h.createAccount();
    const member = await h.createUser(account);
    const answer = await h.graphql(PAGE, {}, member.key);
    expect(answer.data?.users.totalCount).toBeGreaterThanOrEqual(2);
    for (const root of ['provisioningTokens', 'singleSignOn', 'apiKeys', 'oauthApps', 'auditRecords']) {
      expect([root, answer.data?.[root]]).toEqual([root, null]);
      expect([root, answer.errors?.find((error) => error.path?.[0] === root)?.extensions?.code]).toEqual([root, 'FORBIDDEN']);
    }
  });

  test('an admin gets every root', async () => {
    const account = await h.createAccount();
    const answer = await h.graphql(PAGE, {}, account.key);
    expect(answer.errors).toBeUndefined();
    expect(answer.data?.singleSignOn.id).toBeTruthy();
  });
});
