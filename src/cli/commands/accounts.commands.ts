import { AccountsService } from '../../accounts/accounts.service.js';
import { bootstrapAccount } from '../../accounts/bootstrap.js';
import { requireOption, type CliCommand } from '../command.js';

export const migrateCommand: CliCommand = {
  name: 'migrate',
  usage: 'accessctl migrate [--json]',
  options: {},
  // Every command migrates first (see accessctl.ts); this one only reports.
  run: async () => ({ status: 'up to date' }),
  human: () => 'Database schema is up to date.',
};

export const bootstrapCommand: CliCommand = {
  name: 'bootstrap',
  usage: 'accessctl bootstrap --account-name NAME --owner-email EMAIL [--owner-name NAME] [--json]',
  options: { 'account-name': { type: 'string' }, 'owner-email': { type: 'string' }, 'owner-name': { type: 'string' } },
  async run(database, values) {
    const options = {
      accountName: requireOption(values, 'account-name'),
      ownerEmail: requireOption(values, 'owner-email'),
      ownerName: typeof values['owner-name'] === 'string' ? values['owner-name'] : undefined,
    };
    const result = await database.transactions.run(database.em(), (tx) => bootstrapAccount(tx, options), 'accounts.bootstrap');
    return { account: { id: result.account.id }, owner: result.owner, api_key: result.apiKey };
  },
  human: (result) => {
    const { account, owner, api_key } = result as { account: { id: string }; owner: { id: string; email: string }; api_key: string };
    return `Account ${account.id} created; owner ${owner.id} <${owner.email}>.\nFull-access API key (shown only now): ${api_key}`;
  },
};

export const createApiKeyCommand: CliCommand = {
  name: 'api-keys create',
  usage: 'accessctl api-keys create --account ID [--user ID] [--read-only] [--description TEXT] [--json]',
  options: { account: { type: 'string' }, user: { type: 'string' }, 'read-only': { type: 'boolean' }, description: { type: 'string' } },
  async run(database, values) {
    const options = {
      accountId: requireOption(values, 'account'),
      userId: typeof values.user === 'string' ? values.user : undefined,
      readOnly: values['read-only'] === true,
      description: typeof values.description === 'string' ? values.description : undefined,
    };
    const key = await database.transactions.run(database.em(), (tx) => new AccountsService(tx).createApiKey(options), 'accounts.createApiKey');
    return { id: key.id, api_key: key.apiKey };
  },
  human: (result) => `API key ${String(result.id)} (shown only now): ${String(result.api_key)}`,
};
