import { randomInt } from 'node:crypto';
import { AccountsService } from '../../accounts/accounts.service.js';
import { newPublicId } from '../../db/public-id.js';
import { SubscribablesService } from '../../notification-subscriptions/subscribables.service.js';
import { seedOnCallShifts } from '../../calendar-feed/oncall-shifts.service.js';
import { positiveInteger, requireOption, type CliCommand } from '../command.js';

const FIRST = ['Ada', 'Grace', 'Alan', 'Edsger', 'Barbara', 'Donald', 'Margaret', 'Ken', 'Radia', 'Linus', 'Frances', 'John', 'Katherine', 'Dennis', 'Shafi', 'Leslie'];
const LAST = ['Lovelace', 'Hopper', 'Turing', 'Dijkstra', 'Liskov', 'Knuth', 'Hamilton', 'Thompson', 'Perlman', 'Torvalds', 'Allen', 'McCarthy', 'Johnson', 'Ritchie', 'Goldwasser', 'Lamport'];
const BATCH = 5000;

/**
 * Bulk-inserts users with plain SQL (for benchmarks at 1M rows); ids are drawn like any other, collisions
 * skipped. Each new user also gets `--shifts-per-user` on-call shifts (default 2, 0 for none) for the iCal feed.
 */
export const seedCommand: CliCommand = {
  name: 'seed',
  usage: 'accessctl seed --account ID --users N [--shifts-per-user N] [--json]',
  options: { account: { type: 'string' }, users: { type: 'string' }, 'shifts-per-user': { type: 'string' } },
  async run(database, values, io) {
    const accountId = requireOption(values, 'account');
    const wanted = positiveInteger(values, 'users', 100);
    const shiftsPerUser = values['shifts-per-user'] === '0' ? 0 : positiveInteger(values, 'shifts-per-user', 2);
    await new AccountsService(database.em()).getAccount(accountId);
    const em = database.em();
    let created = 0;
    let shifts = 0;
    let serial = Date.now() % 1_000_000;
    while (created < wanted) {
      const size = Math.min(BATCH, wanted - created);
      const ids: string[] = [];
      const names: string[] = [];
      const emails: string[] = [];
      for (let i = 0; i < size; i++) {
        const first = FIRST[randomInt(FIRST.length)]!;
        const last = LAST[randomInt(LAST.length)]!;
        serial++;
        ids.push(newPublicId());
        names.push(`${first} ${last} ${serial}`);
        emails.push(`${first}.${last}.${serial}@example.com`.toLowerCase());
      }
      const batch = await database.transactions.run(em, async (tx) => {
        const inserted = await tx.execute<{ id: string }[]>(
          `insert into users (id, account_id, name, email, time_zone, color, role, email_set_with_owner_rights)
           select id, ?, name, email, 'Etc/UTC', 'green', 'user', true from unnest(array[?]::text[], array[?]::text[], array[?]::text[]) as t(id, name, email)
           on conflict do nothing
           returning id`,
          [accountId, ids, names, emails],
        );
        return { users: inserted.length, shifts: await seedOnCallShifts(tx, inserted.map((row) => row.id), shiftsPerUser) };
      }, 'seed.batch');
      created += batch.users;
      shifts += batch.shifts;
      if (wanted >= BATCH * 4) io.info(`seeded ${created}/${wanted} users`);
    }
    const subscribables = await database.transactions.run(database.em(), (tx) => new SubscribablesService(tx).addDemoEntities(accountId), 'seed.subscribables');
    return { account: { id: accountId }, users_created: created, shifts_created: shifts, subscribables: subscribables.length };
  },
  human: (result) => `Seeded ${String(result.users_created)} users, ${String(result.shifts_created)} on-call shifts and ${String(result.subscribables)} subscribable entities.`,
};
