import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { startHarness, type Harness } from '../../test/support/harness.js';
import { createDelegationCommand } from '../cli/commands/oauth-delegations.commands.js';
import { DomainError } from '../errors/domain-errors.js';
import { UsageError } from '../cli/command.js';
import { parseDuration } from './oauth-delegation.issuing.js';

let h: Harness;

beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h.close();
});

const io = { info: () => {} };
const run = (values: Record<string, string | boolean | undefined>) => createDelegationCommand.run(h.database, values, io);

describe('accessctl delegations create', () => {
  test('issues a delegation and returns exactly {id, access_token}; the token works at once', async () => {
    const account = await h.createAccount();
    const user = await h.createUser(account);
    const result = await run({ user: user.id, type: 'mobile', scopes: 'users.read users.write', 'client-id': 'MobileApp', 'expires-in': '30d', json: true });
    expect(Object.keys(result).sort()).toEqual(['access_token', 'id']);
    expect(result.access_token).toMatch(/^[A-Za-z0-9_-]{43}$/);

    const me = await h.rest('get', '/users/me', { key: { bearer: String(result.access_token) } });
    expect(me.status).toBe(200);
    expect(me.body.user.id).toBe(user.id);

    const shown = await h.rest('get', `/users/${user.id}/oauth_delegations/${String(result.id)}`, { key: account.key });
    const delegation = shown.body.oauth_delegation;
    expect(delegation).toMatchObject({ delegation_type: 'mobile', client_id: 'MobileApp', scope: 'users.read users.write', status: 'issued' });
    expect(Date.parse(delegation.expires_at) - Date.parse(delegation.created_at)).toBe(30 * 86_400_000);

    const [stored] = await h.database.em().execute<{ access_token_digest: string }[]>('select access_token_digest from oauth_delegations where id = ?', [result.id]);
    expect(stored!.access_token_digest).toMatch(/^[0-9a-f]{64}$/);
    expect(stored!.access_token_digest).not.toBe(result.access_token);
    expect(createDelegationCommand.human(result)).toContain(String(result.access_token));
  });

  test('openid and profile may be issued, but grant no API operation', async () => {
    const account = await h.createAccount();
    const user = await h.createUser(account);
    const result = await run({ user: user.id, type: 'web', scopes: 'openid profile' });
    const me = await h.rest('get', '/users/me', { key: { bearer: String(result.access_token) } });
    expect(me.status).toBe(403);
    expect(me.body.error.errors.join(' ')).toContain('users.read');
  });

  test('refuses unknown scopes, types, users and durations, and missing options', async () => {
    const account = await h.createAccount();
    const user = await h.createUser(account);
    const gone = await h.createUser(account);
    await h.rest('delete', `/users/${gone.id}`, { key: account.key });

    const refusals: [Record<string, string>, RegExp][] = [
      [{ user: user.id, type: 'mobile', scopes: 'users.read admin.everything' }, /admin\.everything/],
      [{ user: user.id, type: 'desktop', scopes: 'users.read' }, /desktop/],
      [{ user: 'PNOSUCH', type: 'web', scopes: 'users.read' }, /PNOSUCH/],
      [{ user: gone.id, type: 'web', scopes: 'users.read' }, new RegExp(gone.id)],
      [{ user: user.id, type: 'web', scopes: 'users.read', 'expires-in': 'forever' }, /forever/],
      [{ user: user.id, type: 'web', scopes: 'users.read', 'client-id': ' ' }, /client-id/],
    ];
    for (const [values, named] of refusals) {
      const error = await run(values).then(() => undefined, (caught: unknown) => caught);
      expect(error).toBeInstanceOf(DomainError);
      expect((error as DomainError).details.join(' ')).toMatch(named);
    }
    await expect(run({ type: 'web', scopes: 'users.read' })).rejects.toBeInstanceOf(UsageError);
    await expect(run({ user: user.id, type: 'web' })).rejects.toBeInstanceOf(UsageError);
    await expect(run({ user: user.id, type: 'web', scopes: '   ' })).rejects.toBeInstanceOf(UsageError);

    const [count] = await h.database.em().execute<{ n: string | number }[]>('select count(*) as n from oauth_delegations where user_id in (?, ?)', [user.id, gone.id]);
    expect(Number(count!.n)).toBe(0);
  });

  test('--expires-in accepts s, m, h, d and w units', () => {
    expect(parseDuration('90')).toBe(90);
    expect(parseDuration('45m')).toBe(2700);
    expect(parseDuration('12h')).toBe(43_200);
    expect(parseDuration('30d')).toBe(2_592_000);
    expect(parseDuration('2w')).toBe(1_209_600);
    for (const bad of ['0d', '-1d', '1y', '', '3.5h']) expect(() => parseDuration(bad)).toThrow(DomainError);
  });
});
