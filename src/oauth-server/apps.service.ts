import { randomBytes } from 'node:crypto';
import { recordChange } from '../db/change-journal.js';
import type { TransactionRunner } from '../db/transaction.js';
import type { EntityManager } from '@mikro-orm/sql';
import type { ClientMetadata } from 'oidc-provider';
import { Account } from '../accounts/account.entity.js';
import type { Principal } from '../auth/principal.js';
import { newSecretToken } from '../auth/secrets.js';
import { PUBLIC_ID_PATTERN } from '../db/public-id.js';
import { InvalidInputError, NotFoundError } from '../errors/domain-errors.js';
import { mayHoldScope } from '../auth/scopes.js';
import { parseScopes, recordGrantDelegation, revokeClientDelegations, ISSUABLE_SCOPES } from '../oauth-delegations/oauth-delegation.service.js';
import { APP_KINDS, OAuthApp, isAppKind, type AppKind } from './oauth-app.entity.js';
import type { Sealer } from './sealing.js';

export const APP_NAME_MAX = 100;
const MAX_REDIRECT_URIS = 10;
/** An integration acts for the account as long as the app exists; its delegation says so. */
const INTEGRATION_DELEGATION_LIFETIME_MS = 100 * 365 * 86_400_000;

/** Confidential clients authenticate with a secret; the mobile app cannot keep one. */
export function isConfidential(kind: AppKind): boolean {
  return kind !== 'mobile';
}

/** What a delegation made by this app is called in listings (SPEC section 6 types). */
export function delegationTypeFor(kind: AppKind): 'mobile' | 'web' | 'integration' {
  return kind === 'mobile' ? 'mobile' : kind === 'web' ? 'web' : 'integration';
}

export interface CreateAppOptions {
  accountId: string;
  name: string;
  kind: string;
  redirectUris: readonly string[];
  scopes?: string;
}

export interface CreatedApp {
  app: OAuthApp;
  /** Confidential clients only; shown once. */
  clientSecret?: string;
}

function validRedirectUri(raw: string, kind: AppKind): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new InvalidInputError(`redirect-uri "${raw}" is not an absolute URI`);
  }
  if (url.hash) throw new InvalidInputError(`redirect-uri "${raw}" must not have a fragment`);
  const loopback = url.hostname === 'localhost' || url.hostname === '127.0.0.1' || url.hostname === '[::1]';
  if (kind !== 'mobile' && url.protocol !== 'https:' && !(url.protocol === 'http:' && loopback)) {
    throw new InvalidInputError(`redirect-uri "${raw}" must use https (http only for localhost)`);
  }
  if (kind === 'mobile' && url.protocol === 'http:' && !loopback) {
    throw new InvalidInputError(`redirect-uri "${raw}": a mobile app uses a private-use scheme, https, or a loopback http address`);
  }
  // Kept exactly as registered: redirect URIs are compared as strings.
  return raw;
}

export class AppsService {
  constructor(
    private readonly em: EntityManager,
    private readonly sealer: Sealer,
    private readonly transactions: TransactionRunner,
  ) {}

  /** Registers an app; a confidential one gets a secret, returned once and stored sealed only. */
  async create(options: CreateAppOptions): Promise<CreatedApp> {
    if (!isAppKind(options.kind)) throw new InvalidInputError(`kind must be one of ${APP_KINDS.join(', ')} (got "${options.kind}")`);
    const kind = options.kind;
    const name = options.name.trim();
    if (name === '' || name.length > APP_NAME_MAX) throw new InvalidInputError(`name must be 1 to ${APP_NAME_MAX} characters`);
    const redirectUris = [...new Set(options.redirectUris.map((uri) => validRedirectUri(uri.trim(), kind)))];
    if (kind === 'integration' && redirectUris.length) throw new InvalidInputError('an integration app uses client credentials and takes no redirect-uri');
    if (kind !== 'integration' && redirectUris.length === 0) throw new InvalidInputError('at least one --redirect-uri is required for a sign-in app');
    if (redirectUris.length > MAX_REDIRECT_URIS) throw new InvalidInputError(`at most ${MAX_REDIRECT_URIS} redirect URIs`);
    const scopes = parseScopes(options.scopes ?? ISSUABLE_SCOPES.filter((scope) => mayHoldScope(kind, scope)).join(' '));
    const refused = scopes.filter((scope) => !mayHoldScope(kind, scope));
    if (refused.length) throw new InvalidInputError(`a ${kind} app may not hold ${refused.join(', ')}: only first-party and integration apps may manage credentials`);
    if (kind === 'integration' && scopes.some((scope) => scope === 'openid' || scope === 'profile')) {
      throw new InvalidInputError('an integration app acts for the account, not a user: openid and profile do not apply');
    }
    if (!PUBLIC_ID_PATTERN.test(options.accountId) || !(await this.em.findOne(Account, { id: options.accountId }))) {
      throw new InvalidInputError(`account ${options.accountId} does not exist`);
    }

    const clientSecret = isConfidential(kind) ? newSecretToken(32) : undefined;
    const app = await this.transactions.run(this.em, async (tx) => {
      const app = tx.create(OAuthApp, {
        clientId: randomBytes(16).toString('hex'),
        account: tx.getReference(Account, options.accountId),
        name,
        kind,
        redirectUris,
        scope: scopes.join(' '),
        clientSecretSealed: clientSecret ? this.sealer.seal(clientSecret) : null,
      });
      await tx.persist(app).flush();
      recordChange(tx, {
        accountId: options.accountId,
        action: 'create',
        resource: { type: 'app', id: app.clientId, summary: name },
        fields: [{ name: 'name', value: name }, { name: 'kind', value: kind }, { name: 'scope', value: app.scope }, { name: 'redirect_uris', value: redirectUris.join(' ') }],
      });
      if (kind === 'integration') {
        await recordGrantDelegation(tx, {
          accountId: options.accountId,
          userId: null,
          type: 'integration',
          clientId: app.clientId,
          clientName: name,
          scopes,
          grantId: `client:${app.clientId}`,
          expiresAt: new Date(Date.now() + INTEGRATION_DELEGATION_LIFETIME_MS),
        });
      }
      return app;
    }, 'oauthServer.createApp');
    return { app, clientSecret };
  }

  async list(accountId: string): Promise<OAuthApp[]> {
    return this.em.find(OAuthApp, { account: accountId }, { orderBy: { createdAt: 'desc', clientId: 'asc' } });
  }

  /** Deletes the app and revokes every delegation it holds, in one transaction. */
  async delete(clientId: string, principal?: Principal): Promise<{ revokedDelegations: number }> {
    return this.transactions.run(this.em, async (tx) => {
      const app = await tx.findOne(OAuthApp, { clientId });
      if (!app) throw new NotFoundError('app');
      recordChange(tx, { accountId: app.account.id, action: 'delete', resource: { type: 'app', id: clientId, summary: app.name }, fields: [{ name: 'name', beforeValue: app.name }], revokesAccess: true });
      const revokedDelegations = await revokeClientDelegations(tx, clientId, principal);
      await tx.execute('delete from oauth_server_records where model = ? and grant_id = ?', ['ClientCredentials', `client:${clientId}`]);
      await tx.remove(app).flush();
      return { revokedDelegations };
    }, 'oauthServer.deleteApp');
  }
}

/** The app the authorization server asks about, with what it needs to know beyond client metadata. */
export async function findApp(em: EntityManager, clientId: string): Promise<OAuthApp | null> {
  return clientId.length <= 64 ? em.findOne(OAuthApp, { clientId }) : null;
}

/** oidc-provider's view of an app: read from `oauth_apps` each time, the secret unsealed. */
export async function clientMetadataFor(em: EntityManager, sealer: Sealer, clientId: string): Promise<ClientMetadata | undefined> {
  const app = await (clientId.length <= 64 ? em.findOne(OAuthApp, { clientId }, { populate: ['clientSecretSealed'] }) : null);
  if (!app) return undefined;
  const common = { client_id: app.clientId, client_name: app.name };
  if (app.kind === 'integration') {
    return { ...common, client_secret: sealer.unseal(app.clientSecretSealed!), grant_types: ['client_credentials'], response_types: [], redirect_uris: [], token_endpoint_auth_method: 'client_secret_basic' };
  }
  const signIn = { ...common, redirect_uris: app.redirectUris, grant_types: ['authorization_code', 'refresh_token'], response_types: ['code' as const] };
  if (app.kind === 'mobile') return { ...signIn, application_type: 'native', token_endpoint_auth_method: 'none' };
  return { ...signIn, application_type: 'web', client_secret: sealer.unseal(app.clientSecretSealed!), token_endpoint_auth_method: 'client_secret_basic' };
}
