import type { ApiKey } from '../../accounts/api-key.entity.js';
import { DEFAULT_ROLL_GRACE_SECONDS, apiKeyKindOf, apiKeyStatusOf, findApiKeyForOperator, listApiKeysForOperator, revokeApiKeyRow, rollApiKeyRow } from '../../accounts/api-keys.service.js';
import { requireOption, UsageError, type CliCommand } from '../command.js';

/** A key as the CLI prints it: what the API's `ApiKey` shows, in snake_case; never the secret. */
function presentKey(key: ApiKey) {
  return {
    id: key.id,
    kind: apiKeyKindOf(key),
    status: apiKeyStatusOf(key),
    user_id: key.userId,
    description: key.description,
    created_at: key.createdAt.toISOString(),
    created_by_user_id: key.createdByUserId,
    last_used_at: key.lastUsedAt?.toISOString() ?? null,
    expires_at: key.expiresAt?.toISOString() ?? null,
    revoked_at: key.revokedAt?.toISOString() ?? null,
    truncated_token: key.tokenTail,
  };
}

type PresentedKey = ReturnType<typeof presentKey>;

const line = (key: PresentedKey) =>
  `${key.id}  ${key.kind}${key.user_id ? ` ${key.user_id}` : ''}  ${key.status}  created ${key.created_at}  last used ${key.last_used_at ?? 'never'}`
  + `${key.expires_at ? `  expires ${key.expires_at}` : ''}${key.truncated_token ? `  ...${key.truncated_token}` : ''}  ${key.description ?? ''}`.trimEnd();

export const listApiKeysCommand: CliCommand = {
  name: 'api-keys list',
  usage: 'accessctl api-keys list --account ID [--user ID] [--json]',
  options: { account: { type: 'string' }, user: { type: 'string' } },
  async run(database, values) {
    const userId = typeof values.user === 'string' ? values.user : undefined;
    const keys = await listApiKeysForOperator(database.em(), requireOption(values, 'account'), userId);
    return { api_keys: keys.map(presentKey) };
  },
  human: (result) => {
    const keys = result.api_keys as PresentedKey[];
    return keys.length === 0 ? 'No API keys.' : keys.map(line).join('\n');
  },
};

export const revokeApiKeyCommand: CliCommand = {
  name: 'api-keys revoke',
  usage: 'accessctl api-keys revoke --id ID [--json]',
  options: { id: { type: 'string' } },
  async run(database, values) {
    const id = requireOption(values, 'id');
    const key = await database.transactions.run(database.em(), async (tx) => revokeApiKeyRow(tx, await findApiKeyForOperator(tx, id)), 'apiKeys.revoke');
    return { api_key: presentKey(key) };
  },
  human: (result) => `API key ${(result.api_key as PresentedKey).id} revoked at ${(result.api_key as PresentedKey).revoked_at}; it is refused from now on, on every instance.`,
};

export const rollApiKeyCommand: CliCommand = {
  name: 'api-keys roll',
  usage: `accessctl api-keys roll --id ID [--previous-expires-in SECONDS (0 to 604800, default ${DEFAULT_ROLL_GRACE_SECONDS})] [--json]`,
  options: { id: { type: 'string' }, 'previous-expires-in': { type: 'string' } },
  async run(database, values) {
    const id = requireOption(values, 'id');
    const raw = values['previous-expires-in'];
    if (raw !== undefined && (typeof raw !== 'string' || !/^\d+$/.test(raw))) throw new UsageError('--previous-expires-in must be a whole number of seconds');
    const grace = raw === undefined ? DEFAULT_ROLL_GRACE_SECONDS : Number(raw);
    const rolled = await database.transactions.run(database.em(), async (tx) => rollApiKeyRow(tx, await findApiKeyForOperator(tx, id), grace, null), 'apiKeys.roll');
    return { id: rolled.apiKey.id, api_key: rolled.secret, previous: presentKey(rolled.previous) };
  },
  human: (result) => `API key ${String(result.id)} replaces ${(result.previous as PresentedKey).id}, which works until ${(result.previous as PresentedKey).expires_at}.\nNew key (shown only now): ${String(result.api_key)}`,
};

export const apiKeyCommands: CliCommand[] = [listApiKeysCommand, revokeApiKeyCommand, rollApiKeyCommand];
