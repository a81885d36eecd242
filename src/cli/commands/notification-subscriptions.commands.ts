import { SubscribablesService } from '../../notification-subscriptions/subscribables.service.js';
import { SUBSCRIBABLE_TYPES, isSubscribableType } from '../../notification-subscriptions/subscribable.entity.js';
import { UsageError, requireOption, type CliCommand } from '../command.js';

/** Registers (or renames) an entity users of the account may subscribe to. */
export const addSubscribableCommand: CliCommand = {
  name: 'subscribables add',
  usage: `accessctl subscribables add --account ID --type ${SUBSCRIBABLE_TYPES.join('|')} --id PUBLIC_ID --name NAME [--json]`,
  options: { account: { type: 'string' }, type: { type: 'string' }, id: { type: 'string' }, name: { type: 'string' } },
  async run(database, values) {
    const type = requireOption(values, 'type');
    if (!isSubscribableType(type)) throw new UsageError(`--type must be one of ${SUBSCRIBABLE_TYPES.join(', ')}`);
    const input = { accountId: requireOption(values, 'account'), type, id: requireOption(values, 'id'), name: requireOption(values, 'name') };
    const entity = await database.transactions.run(database.em(), (tx) => new SubscribablesService(tx).add(input), 'notificationSubscriptions.register');
    return { id: entity.id, type: entity.type };
  },
  human: (result) => `Registered ${String(result.type)} ${String(result.id)}; users of the account can now subscribe to it.`,
};
