import { readFile } from 'node:fs/promises';
import { SsoService, ssoSecretSealer } from '../../sso/sso.service.js';
import { serviceProviderDetails } from '../../sso/sso.service-provider.js';
import { UsageError, requireOption, type CliCommand, type CommandIo } from '../command.js';
import type { Database } from '../../db/database.js';

function ssoService(database: Database, io: CommandIo): SsoService {
  if (!io.serverSecret) throw new UsageError('this command needs the server secret (SECRET_KEY or DATA_DIR)');
  return new SsoService(database.em(), database.transactions, ssoSecretSealer(io.serverSecret()));
}

/** `--saml-metadata` names a file or an http(s) URL the provider publishes its metadata at. */
async function readMetadata(source: string): Promise<string> {
  if (!/^https?:\/\//i.test(source)) return readFile(source, 'utf8');
  const response = await fetch(source, { signal: AbortSignal.timeout(15_000) });
  if (!response.ok) throw new UsageError(`the metadata URL answered ${response.status}`);
  return response.text();
}

export const configureSsoCommand: CliCommand = {
  name: 'sso configure',
  usage: 'accessctl sso configure --account ID (--oidc-issuer URL --client-id ID | --saml-metadata FILE|URL) [--name "Okta"] [--require-sso] [--jit] [--json]   (the OIDC client secret is read from standard input)',
  options: { account: { type: 'string' }, 'oidc-issuer': { type: 'string' }, 'client-id': { type: 'string' }, 'saml-metadata': { type: 'string' }, name: { type: 'string' }, 'require-sso': { type: 'boolean' }, jit: { type: 'boolean' } },
  async run(database, values, io) {
    const accountId = requireOption(values, 'account');
    const issuer = values['oidc-issuer'];
    const metadata = values['saml-metadata'];
    if ((typeof issuer === 'string') === (typeof metadata === 'string')) throw new UsageError('give either --oidc-issuer (with --client-id) or --saml-metadata');
    let oidc;
    if (typeof issuer === 'string') {
      if (!io.readStdin) throw new UsageError('the client secret is read from standard input');
      // One trailing newline (from echo or a terminal) is not part of the secret; an empty one means a public client.
      const clientSecret = (await io.readStdin()).replace(/\r?\n$/, '');
      oidc = { issuer, clientId: requireOption(values, 'client-id'), clientSecret };
    }
    const service = ssoService(database, io);
    await service.configure({
      accountId,
      displayName: typeof values.name === 'string' ? values.name : undefined,
      oidc,
      samlMetadataXml: typeof metadata === 'string' ? await readMetadata(metadata) : undefined,
      requireSso: values['require-sso'] === true,
      jit: values.jit === true,
      // The operator has owner rights: this configuration may sign in the owner and every admin.
      savedBy: 'operator',
    });
    return { account_id: accountId, ...(await describe(service, accountId, io)) };
  },
  human: (result) => `Single sign-on configured for account ${String(result.account_id)}.\n${humanDetails(result)}`,
};

async function describe(service: SsoService, accountId: string, io: CommandIo): Promise<Record<string, unknown>> {
  const configuration = await service.show(accountId);
  const sp = serviceProviderDetails(io.apiUrl?.() ?? 'http://localhost:3000', accountId);
  return {
    identity_provider: configuration && {
      protocol: configuration.protocol,
      display_name: configuration.displayName,
      require_sso: configuration.requireSso,
      jit: configuration.jit,
      oidc_issuer: configuration.oidcIssuer,
      oidc_client_id: configuration.oidcClientId,
      oidc_client_secret_stored: configuration.oidcClientSecretStored,
      saml_idp_entity_id: configuration.samlIdpEntityId,
      saml_sso_url: configuration.samlSsoUrl,
      saved_with_owner_rights: configuration.savedWithOwnerRights,
    },
    service_provider: { oidc_redirect_uri: sp.oidcRedirectUri, saml_entity_id: sp.samlEntityId, saml_acs_url: sp.samlAssertionConsumerUrl, saml_metadata_url: sp.samlMetadataUrl },
  };
}

function humanDetails(result: Record<string, unknown>): string {
  return JSON.stringify({ identity_provider: result.identity_provider, service_provider: result.service_provider }, null, 2);
}

export const showSsoCommand: CliCommand = {
  name: 'sso show',
  usage: 'accessctl sso show --account ID [--json]   (never shows the client secret)',
  options: { account: { type: 'string' } },
  async run(database, values, io) {
    const accountId = requireOption(values, 'account');
    return { account_id: accountId, ...(await describe(ssoService(database, io), accountId, io)) };
  },
  human: (result) => (result.identity_provider ? humanDetails(result) : `Account ${String(result.account_id)} has no single sign-on.\n${humanDetails(result)}`),
};

export const disableSsoCommand: CliCommand = {
  name: 'sso disable',
  usage: 'accessctl sso disable --account ID [--json]   (users sign in with passwords again)',
  options: { account: { type: 'string' } },
  async run(database, values, io) {
    const accountId = requireOption(values, 'account');
    const removed = await ssoService(database, io).disable(accountId);
    return { account_id: accountId, disabled: removed };
  },
  human: (result) => (result.disabled ? `Single sign-on disabled for account ${String(result.account_id)}.` : `Account ${String(result.account_id)} had no single sign-on.`),
};

export const ssoCommands: CliCommand[] = [configureSsoCommand, showSsoCommand, disableSsoCommand];
