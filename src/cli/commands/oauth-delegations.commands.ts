import { issueDelegation, parseDuration } from '../../oauth-delegations/oauth-delegation.service.js';
import { requireOption, type CliCommand } from '../command.js';

/**
 * Issues a delegation and prints its access token once, for operators and tests (sign-ins and
 * app authorizations create delegations outside this API).
 */
export const createDelegationCommand: CliCommand = {
  name: 'delegations create',
  usage: 'accessctl delegations create --user ID --type mobile|web|integration --scopes "users.read users.write" [--client-id C] [--expires-in 30d] [--json]',
  options: { user: { type: 'string' }, type: { type: 'string' }, scopes: { type: 'string' }, 'client-id': { type: 'string' }, 'expires-in': { type: 'string' } },
  async run(database, values) {
    const expiresIn = values['expires-in'];
    const options = {
      userId: requireOption(values, 'user'),
      type: requireOption(values, 'type'),
      scopes: requireOption(values, 'scopes'),
      clientId: typeof values['client-id'] === 'string' ? values['client-id'] : undefined,
      expiresInSeconds: typeof expiresIn === 'string' ? parseDuration(expiresIn) : undefined,
    };
    const issued = await database.transactions.run(database.em(), (tx) => issueDelegation(tx, options), 'oauthDelegations.issue');
    return { id: issued.delegation.id, access_token: issued.accessToken };
  },
  human: (result) => `OAuth delegation ${String(result.id)} issued.\nAccess token (shown only now; send as "Authorization: Bearer <token>"): ${String(result.access_token)}`,
};
