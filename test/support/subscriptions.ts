import type { Harness, TestAccount } from './harness.js';
import { SubscribablesService } from '../../src/notification-subscriptions/subscribables.service.js';
import type { SubscribableType } from '../../src/notification-subscriptions/subscribable.entity.js';

/** Fixtures for the notification-subscription tests of both faces. */
export function subscriptionFixtures(harness: () => Harness) {
  const fixtures = {
    async register(account: TestAccount, type: SubscribableType, id: string, name = `${type} ${id}`): Promise<void> {
      await new SubscribablesService(harness().database.em()).add({ accountId: account.id, type, id, name });
    },
    /** What the database holds for the user, in subscription order. */
    async stored(userId: string): Promise<string[]> {
      const rows = await harness().database.em().execute<{ type: string; public_id: string }[]>(
        `select s.type, s.public_id from notification_subscriptions ns join subscribables s on s.id = ns.subscribable_id
          where ns.user_id = ? order by ns.id`,
        [userId],
      );
      return rows.map((row) => `${row.type}:${row.public_id}`);
    },
    /** The counts scenario both faces run: four entities of the user's account and one of another account. */
    async countsScenario() {
      const h = harness();
      const account = await h.createAccount();
      const other = await h.createAccount();
      const user = await h.createUser(account);
      await fixtures.register(account, 'incident', 'PINC001', 'Checkout is slow');
      await fixtures.register(account, 'business_service', 'PBIZ001', 'Payments');
      await fixtures.register(account, 'incident', 'PINC002', 'Disk full');
      await fixtures.register(account, 'incident', 'PINC003', 'Never subscribed');
      await fixtures.register(other, 'incident', 'PFOREIGN', 'Another account\'s incident');
      return { account, other, user };
    },
  };
  return fixtures;
}
