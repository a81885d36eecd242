import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { startHarness, type Harness } from '../../test/support/harness.js';
import { UsageError } from '../cli/command.js';
import { addSubscribableCommand } from '../cli/commands/notification-subscriptions.commands.js';
import { seedCommand } from '../cli/commands/seed.command.js';
import { DomainError } from '../errors/domain-errors.js';
import { DEMO_SUBSCRIBABLES } from './subscribables.service.js';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h.close();
});

const io = { info: () => {} };

async function registry(accountId: string): Promise<string[]> {
  const rows = await h.database.em().execute<{ type: string; public_id: string; name: string }[]>(
    'select type, public_id, name from subscribables where account_id = ? order by type, public_id',
    [accountId],
  );
  return rows.map((row) => `${row.type}:${row.public_id}:${row.name}`);
}

describe('accessctl subscribables add', () => {
  test('registers an entity, answers {"id","type"} for --json, and renames on a second add', async () => {
    const account = await h.createAccount();
    const result = await addSubscribableCommand.run(h.database, { account: account.id, type: 'incident', id: 'PD1234', name: 'Checkout down', json: true }, io);
    expect(result).toEqual({ id: 'PD1234', type: 'incident' });
    expect(JSON.parse(JSON.stringify(result))).toEqual({ id: 'PD1234', type: 'incident' });
    expect(addSubscribableCommand.human(result)).toContain('PD1234');

    await addSubscribableCommand.run(h.database, { account: account.id, type: 'business_service', id: 'PD1234', name: 'Payments' }, io);
    await addSubscribableCommand.run(h.database, { account: account.id, type: 'incident', id: 'PD1234', name: 'Checkout is back' }, io);
    expect(await registry(account.id)).toEqual(['business_service:PD1234:Payments', 'incident:PD1234:Checkout is back']);

    // A user of the account can now subscribe to it and sees its name.
    const user = await h.createUser(account);
    const subscribed = await h.rest('post', `/users/${user.id}/notification_subscriptions`, { key: user.key, body: { subscribables: [{ subscribable_type: 'incident', subscribable_id: 'PD1234' }] } });
    expect(subscribed.body.subscriptions[0].result).toBe('success');
    const listed = await h.rest('get', `/users/${user.id}/notification_subscriptions`, { key: user.key });
    expect(listed.body.subscriptions[0].subscribable_name).toBe('Checkout is back');
  });

  test('refuses a bad type, missing options, blank values and an unknown account', async () => {
    const account = await h.createAccount();
    await expect(addSubscribableCommand.run(h.database, { account: account.id, type: 'team', id: 'P1', name: 'x' }, io)).rejects.toBeInstanceOf(UsageError);
    await expect(addSubscribableCommand.run(h.database, { account: account.id, type: 'incident', name: 'x' }, io)).rejects.toBeInstanceOf(UsageError);
    await expect(addSubscribableCommand.run(h.database, { account: account.id, type: 'incident', id: 'P1', name: '   ' }, io)).rejects.toBeInstanceOf(UsageError);
    await expect(addSubscribableCommand.run(h.database, { account: account.id, type: 'incident', id: 'P1', name: 'x'.repeat(256) }, io)).rejects.toBeInstanceOf(DomainError);
    await expect(addSubscribableCommand.run(h.database, { account: 'PNOSUCH', type: 'incident', id: 'P1', name: 'x' }, io)).rejects.toBeInstanceOf(DomainError);
    expect(await registry(account.id)).toEqual([]);
  });
});

describe('accessctl seed', () => {
  test('also registers a few subscribable entities in the seeded account, idempotently', async () => {
    const account = await h.createAccount();
    const result = await seedCommand.run(h.database, { account: account.id, users: '3' }, io);
    expect(result).toEqual({ account: { id: account.id }, users_created: 3, shifts_created: 6, subscribables: DEMO_SUBSCRIBABLES.length });
    const [users] = await h.database.em().execute<{ n: number }[]>('select count(*)::int as n from users where account_id = ?', [account.id]);
    expect(users!.n).toBe(4); // the owner and the three seeded users
    await seedCommand.run(h.database, { account: account.id, users: '1' }, io);
    const expected = DEMO_SUBSCRIBABLES.map((entity) => `${entity.type}:${entity.id}:${entity.name}`).sort();
    expect((await registry(account.id)).sort()).toEqual(expected);
  });
});
