import { purgeExpiredRecords } from '../../oauth-server/adapter.js';
import { AppsService, PREVIOUS_SECRET_DEFAULT_SECONDS, PREVIOUS_SECRET_MAX_SECONDS } from '../../oauth-server/apps.service.js';
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
    const created = await appsService(database, io).create({
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
    const apps = await appsService(database, io).list(requireOption(values, 'account'));
    return {
      apps: apps.map((app) => ({ client_id: app.clientId, name: app.name, kind: app.kind, redirect_uris: app.redirectUris, scope: app.scope, disabled: app.disabledAt !== null, created_at: app.createdAt.toISOString() })),
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
    const { revokedDelegations } = await appsService(database, io).delete(clientId);
    return { client_id: clientId, revoked_delegations: revokedDelegations };
  },
  human: (result) => `App ${String(result.client_id)} deleted; ${String(result.revoked_delegations)} delegation(s) revoked.`,
};

function appsService(database: Parameters<CliCommand['run']>[0], io: CommandIo): AppsService {
  return new AppsService(database.em(), sealersFor(serverSecret(io)).clientSecrets, database.transactions);
}

export const rotateAppSecretCommand: CliCommand = {
  name: 'apps rotate-secret',
  usage: `accessctl apps rotate-secret --client-id ID [--previous-expires-in SECONDS] [--json]   (the old secret keeps working that long: 0 to ${PREVIOUS_SECRET_MAX_SECONDS}, default ${PREVIOUS_SECRET_DEFAULT_SECONDS})`,
  options: { 'client-id': { type: 'string' }, 'previous-expires-in': { type: 'string' } },
  async run(database, values, io) {
    const raw = values['previous-expires-in'];
    const previousExpiresIn = typeof raw === 'string' ? Number(raw.trim()) : PREVIOUS_SECRET_DEFAULT_SECONDS;
    const rotated = await appsService(database, io).rotateSecret(requireOption(values, 'client-id'), previousExpiresIn);
    return {
      client_id: rotated.app.clientId,
      client_secret: rotated.clientSecret,
      previous_secret_expires_at: rotated.app.previousSecretExpiresAt?.toISOString() ?? null,
    };
  },
  human: (result) => `New client_secret for ${String(result.client_id)} (shown only now): ${String(result.client_secret)}\n`
    + (result.previous_secret_expires_at ? `The previous secret works until ${String(result.previous_secret_expires_at)}.` : 'The previous secret no longer works.'),
};

function switchAppCommand(disabled: boolean): CliCommand {
  const verb = disabled ? 'disable' : 'enable';
  return {
    name: `apps ${verb}`,
    usage: `accessctl apps ${verb} --client-id ID [--json]   (${disabled ? 'its tokens are refused and its flows fail until it is enabled again' : 'its unrevoked tokens work again'})`,
    options: { 'client-id': { type: 'string' } },
    async run(database, values, io) {
      const app = await appsService(database, io).update(requireOption(values, 'client-id'), { disabled });
      return { client_id: app.clientId, disabled: app.disabledAt !== null };
    },
    human: (result) => `App ${String(result.client_id)} ${result.disabled ? 'disabled' : 'enabled'}.`,
  };
}

export const disableAppCommand = switchAppCommand(true);
export const enableAppCommand = switchAppCommand(false);

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

export const oauthServerCommands: CliCommand[] = [createAppCommand, listAppsCommand, deleteAppCommand, rotateAppSecretCommand, disableAppCommand, enableAppCommand, setPasswordCommand, rotateSigningKeysCommand, purgeCommand];
