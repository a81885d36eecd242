import { randomInt } from 'node:crypto';
import { AccountsService } from '../../accounts/accounts.service.js';
import { newPublicId } from '../../db/public-id.js';
import { SubscribablesService } from '../../notification-subscriptions/subscribables.service.js';
import { positiveInteger, requireOption, type CliCommand } from '../command.js';

const FIRST = ['Ada', 'Grace', 'Alan', 'Edsger', 'Barbara', 'Donald', 'Margaret', 'Ken', 'Radia', 'Linus', 'Frances', 'John', 'Katherine', 'Dennis', 'Shafi', 'Leslie'];
const LAST = ['Lovelace', 'Hopper', 'Turing', 'Dijkstra', 'Liskov', 'Knuth', 'Hamilton', 'Thompson', 'Perlman', 'Torvalds', 'Allen', 'McCarthy', 'Johnson', 'Ritchie', 'Goldwasser', 'Lamport'];
const BATCH = 5000;

/** Bulk-inserts users with plain SQL (for benchmarks at 1M rows); ids are drawn like any other, collisions skipped. */
export const seedCommand: CliCommand = {
  name: 'seed',
  usage: 'accessctl seed --account ID --users N [--json]',
  options: { account: { type: 'string' }, users: { type: 'string' } },
  async run(database, values, io) {
    const accountId = requireOption(values, 'account');
    const wanted = positiveInteger(values, 'users', 100);
    await new AccountsService(database.em()).getAccount(accountId);
    const em = database.em();
    let created = 0;
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
      const result = await em.execute<{ affectedRows?: number }>(
        `insert into users (id, account_id, name, email, time_zone, color, role)
         select id, ?, name, email, 'Etc/UTC', 'green', 'user' from unnest(array[?]::text[], array[?]::text[], array[?]::text[]) as t(id, name, email)
         on conflict do nothing`,
        [accountId, ids, names, emails],
        'run',
      );
      created += result.affectedRows ?? size;
      if (wanted >= BATCH * 4) io.info(`seeded ${created}/${wanted} users`);
    }
    const subscribables = await new SubscribablesService(database.em()).addDemoEntities(accountId);
    return { account: { id: accountId }, users_created: created, subscribables: subscribables.length };
  },
  human: (result) => `Seeded ${String(result.users_created)} users and ${String(result.subscribables)} subscribable entities.`,
};
