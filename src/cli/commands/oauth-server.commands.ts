import { purgeExpiredRecords } from '../../oauth-server/adapter.js';
import { AppsService } from '../../oauth-server/apps.service.js';
import { APP_KINDS } from '../../oauth-server/oauth-app.entity.js';
import { setPassword } from '../../oauth-server/passwords.js';
import { sealersFor } from '../../oauth-server/provider.js';
import { rotateSigningKeys } from '../../oauth-server/signing-keys.js';
import { UsageError, requireOption, type CliCommand, type CommandIo } from '../command.js';

function serverSecret(io: CommandIo): Buffer {
  if (!io.serverSecret) throw new UsageError('this command needs the server secret (SECRET_KEY or DATA_DIR)');
  return io.serverSecret();
}

/** A repeatable option: `--redirect-uri A --redirect-uri B`. */
function repeated(values: Record<string, unknown>, name: string): string[] {
  const raw = values[name];
  if (raw === undefined) return [];
  return (Array.isArray(raw) ? raw : [raw]).filter((value): value is string => typeof value === 'string');
}

export const createAppCommand: CliCommand = {
  name: 'apps create',
  usage: `accessctl apps create --account ID --name NAME --kind ${APP_KINDS.join('|')} --redirect-uri URI [--redirect-uri URI ...] [--scopes "s1 s2"] [--json]`,
  options: { account: { type: 'string' }, name: { type: 'string' }, kind: { type: 'string' }, 'redirect-uri': { type: 'string', multiple: true }, scopes: { type: 'string' } },
  async run(database, values, io) {
    const created = await new AppsService(database.em(), sealersFor(serverSecret(io)).clientSecrets, database.transactions).create({
      accountId: requireOption(values, 'account'),
      name: requireOption(values, 'name'),
      kind: requireOption(values, 'kind'),
      redirectUris: repeated(values, 'redirect-uri'),
      scopes: typeof values.scopes === 'string' ? values.scopes : undefined,
    });
    return { client_id: created.app.clientId, ...(created.clientSecret ? { client_secret: created.clientSecret } : {}) };
  },
  human: (result) => `App registered. client_id: ${String(result.client_id)}${result.client_secret ? `\nclient_secret (shown only now): ${String(result.client_secret)}` : '\n(public client: no secret; use PKCE)'}`,
};

export const listAppsCommand: CliCommand = {
  name: 'apps list',
  usage: 'accessctl apps list --account ID [--json]',
  options: { account: { type: 'string' } },
  async run(database, values, io) {
    const apps = await new AppsService(database.em(), sealersFor(serverSecret(io)).clientSecrets, database.transactions).list(requireOption(values, 'account'));
    return {
      apps: apps.map((app) => ({ client_id: app.clientId, name: app.name, kind: app.kind, redirect_uris: app.redirectUris, scope: app.scope, created_at: app.createdAt.toISOString() })),
    };
  },
  human: (result) => {
    const apps = result.apps as Array<{ client_id: string; name: string; kind: string; scope: string }>;
    return apps.length ? apps.map((app) => `${app.client_id}  ${app.kind.padEnd(11)}  ${app.name}  [${app.scope}]`).join('\n') : 'No apps.';
  },
};

export const deleteAppCommand: CliCommand = {
  name: 'apps delete',
  usage: 'accessctl apps delete --client-id ID [--json]',
  options: { 'client-id': { type: 'string' } },
  async run(database, values, io) {
    const clientId = requireOption(values, 'client-id');
    const { revokedDelegations } = await new AppsService(database.em(), sealersFor(serverSecret(io)).clientSecrets, database.transactions).delete(clientId);
    return { client_id: clientId, revoked_delegations: revokedDelegations };
  },
  human: (result) => `App ${String(result.client_id)} deleted; ${String(result.revoked_delegations)} delegation(s) revoked.`,
};

export const setPasswordCommand: CliCommand = {
  name: 'users set-password',
  usage: 'accessctl users set-password --user ID   (reads the password from standard input)',
  options: { user: { type: 'string' } },
  async run(database, values, io) {
    const userId = requireOption(values, 'user');
    if (!io.readStdin) throw new UsageError('the password is read from standard input');
    // One trailing newline (from echo or a terminal) is not part of the password.
    const password = (await io.readStdin()).replace(/\r?\n$/, '');
    await setPassword(database.em(), database.transactions, userId, password);
    return { user_id: userId, status: 'password set' };
  },
  human: (result) => `Password set for user ${String(result.user_id)}; their sign-in sessions and OAuth delegations are revoked.`,
};

export const rotateSigningKeysCommand: CliCommand = {
  name: 'oauth rotate-keys',
  usage: 'accessctl oauth rotate-keys [--json]   (new signing key; instances use it after a restart)',
  options: {},
  async run(database, _values, io) {
    const rotated = await rotateSigningKeys(database.em(), sealersFor(serverSecret(io)).signingKeys);
    return { kid: rotated.kid, removed_keys: rotated.removed };
  },
  human: (result) => `New signing key ${String(result.kid)}; ${String(result.removed_keys)} old key(s) removed. Restart instances to sign with it.`,
};

export const purgeCommand: CliCommand = {
  name: 'oauth purge',
  usage: 'accessctl oauth purge [--json]   (removes expired sessions, codes and tokens now; the server also does it as it goes)',
  options: {},
  async run(database) {
    let removed = 0;
    for (let batch = await purgeExpiredRecords(database.em()); batch > 0; batch = await purgeExpiredRecords(database.em())) removed += batch;
    return { removed };
  },
  human: (result) => `${String(result.removed)} expired record(s) removed.`,
};

export const oauthServerCommands: CliCommand[] = [createAppCommand, listAppsCommand, deleteAppCommand, setPasswordCommand, rotateSigningKeysCommand, purgeCommand];
