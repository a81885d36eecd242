import { ProvisioningTokensService } from '../../scim/provisioning-tokens.service.js';
import { requireOption, type CliCommand } from '../command.js';

export const createProvisioningTokenCommand: CliCommand = {
  name: 'provisioning-tokens create',
  usage: 'accessctl provisioning-tokens create --account ID [--description TEXT] [--json]',
  options: { account: { type: 'string' }, description: { type: 'string' } },
  async run(database, values) {
    const accountId = requireOption(values, 'account');
    const description = typeof values.description === 'string' ? values.description : undefined;
    const issued = await database.transactions.run(database.em(), (tx) => new ProvisioningTokensService(tx).create(accountId, description), 'provisioningTokens.create');
    return { id: issued.id, token: issued.token };
  },
  human: (result) => `Provisioning token ${String(result.id)} created; valid only on /scim/v2 of this account.\nToken (shown only now; the identity provider sends "Authorization: Bearer <token>"): ${String(result.token)}`,
};

export const listProvisioningTokensCommand: CliCommand = {
  name: 'provisioning-tokens list',
  usage: 'accessctl provisioning-tokens list --account ID [--json]',
  options: { account: { type: 'string' } },
  async run(database, values) {
    return { provisioning_tokens: await new ProvisioningTokensService(database.em()).list(requireOption(values, 'account')) };
  },
  human: (result) => {
    const tokens = result.provisioning_tokens as { id: string; description: string | null; created_at: string; revoked_at: string | null }[];
    if (tokens.length === 0) return 'No provisioning tokens.';
    return tokens.map((token) => `${token.id}  created ${token.created_at}  ${token.revoked_at ? `revoked ${token.revoked_at}` : 'active'}  ${token.description ?? ''}`.trimEnd()).join('\n');
  },
};

export const revokeProvisioningTokenCommand: CliCommand = {
  name: 'provisioning-tokens revoke',
  usage: 'accessctl provisioning-tokens revoke --id ID [--json]',
  options: { id: { type: 'string' } },
  async run(database, values) {
    const id = requireOption(values, 'id');
    const revoked = await database.transactions.run(database.em(), (tx) => new ProvisioningTokensService(tx).revoke(id), 'provisioningTokens.revoke');
    return { id: revoked.id, revoked_at: revoked.revoked_at };
  },
  human: (result) => `Provisioning token ${String(result.id)} revoked at ${String(result.revoked_at)}.`,
};

export const provisioningTokenCommands: CliCommand[] = [createProvisioningTokenCommand, listProvisioningTokensCommand, revokeProvisioningTokenCommand];
