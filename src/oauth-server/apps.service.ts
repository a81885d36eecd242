import { randomBytes } from 'node:crypto';
import { recordChange, type ChangedField } from '../db/change-journal.js';
import type { TransactionRunner } from '../db/transaction.js';
import type { EntityManager } from '@mikro-orm/sql';
import type { ClientMetadata } from 'oidc-provider';
import { Account } from '../accounts/account.entity.js';
import { isUserPrincipal, type Principal } from '../auth/principal.js';
import { hasOwnerRights, policy } from '../auth/policy.js';
import { mintSecret } from '../auth/secret-format.js';
import { LockMode } from '@mikro-orm/core';
import { PUBLIC_ID_PATTERN } from '../db/public-id.js';
import { ForbiddenError, InvalidInputError, NotFoundError } from '../errors/domain-errors.js';
import { parseScopes, recordGrantDelegation, revokeClientDelegations } from '../oauth-delegations/oauth-delegation.service.js';
import { APP_KINDS, CONSENTLESS_KINDS, OAuthApp, isAppKind, type AppKind } from './oauth-app.entity.js';
import type { Sealer } from './sealing.js';
import { checkedName, checkedRedirectUris, checkedScopes, unchanged, valuesOrProblems } from './app-input-checks.js';

export { APP_NAME_MAX } from './app-input-checks.js';

/** An integration acts for the account as long as the app exists; its delegation says so. */
const INTEGRATION_DELEGATION_LIFETIME_MS = 100 * 365 * 86_400_000;
/** How long a rotated-out client secret keeps working, at most and by default: the app's instances switch to the new one meanwhile. */
export const PREVIOUS_SECRET_MAX_SECONDS = 604_800;
export const PREVIOUS_SECRET_DEFAULT_SECONDS = 86_400;

/** Confidential clients authenticate with a secret; the mobile and browser apps cannot keep one. */
export function isConfidential(kind: AppKind): boolean {
  return kind !== 'mobile' && kind !== 'spa';
}

/**
 * What a delegation made by this app is called in listings (a delegation is `mobile`, `web` or `integration`). A browser app
 * (`spa`) is the product's web app in another shape: its sign-ins are `web` delegations, so
 * signing out of the web app ends them.
 */
export function delegationTypeFor(kind: AppKind): 'mobile' | 'web' | 'integration' {
  return kind === 'mobile' ? 'mobile' : kind === 'web' || kind === 'spa' ? 'web' : 'integration';
}


export interface CreateAppOptions {
  accountId: string;
  name: string;
  kind: string;
  redirectUris: readonly string[];
  scopes?: string;
  /** The credential registering the app (none: the operator CLI); a token cannot give the app scopes it lacks. */
  principal?: Principal;
}

export interface AppChanges {
  name?: string;
  redirectUris?: readonly string[];
  scopes?: string;
  disabled?: boolean;
}

export interface CreatedApp {
  app: OAuthApp;
  /** Confidential clients only; shown once. */
  clientSecret?: string;
}

/**
 * An app that signs people in without a consent page hands whoever controls its redirect URIs the
 * tokens of everyone who opens its link: registering one, or giving it redirect URIs, scopes or its
 * access back, takes owner rights (the owner's own credential, or the operator: no principal).
 */
function assertOwnerRightsFor(kind: AppKind, principal: Principal | undefined, what: string): void {
  if (!CONSENTLESS_KINDS.has(kind) || principal === undefined || hasOwnerRights(principal)) return;
  throw new ForbiddenError(`A ${kind} app signs people in without a consent page: only the account owner may ${what} one (or the operator, with accessctl apps).`);
}

export class AppsService {
  private readonly production: boolean;

  constructor(
    private readonly em: EntityManager,
    private readonly sealer: Sealer,
    private readonly transactions: TransactionRunner,
    options: { production?: boolean } = {},
  ) {
    this.production = options.production ?? false;
  }

  /** Registers an app; a confidential one gets a secret, returned once and stored sealed only. */
  async create(options: CreateAppOptions): Promise<CreatedApp> {
    if (!isAppKind(options.kind)) throw new InvalidInputError(`kind must be one of ${APP_KINDS.join(', ')} (got "${options.kind}")`);
    const kind = options.kind;
    if (options.principal) policy.assertManagesCredentials(options.principal);
    assertOwnerRightsFor(kind, options.principal, 'register');
    // Every problem of the registration at once, each at its field.
    const [name, redirectUris, scopes] = valuesOrProblems(
      checkedName(options.name),
      checkedRedirectUris(kind, options.redirectUris, this.production),
      checkedScopes(kind, options.scopes, options.principal),
    );
    if (!PUBLIC_ID_PATTERN.test(options.accountId) || !(await this.em.findOne(Account, { id: options.accountId }))) {
      throw new InvalidInputError(`account ${options.accountId} does not exist`);
    }

    const clientSecret = isConfidential(kind) ? mintSecret('appClientSecret') : undefined;
    const app = await this.transactions.run(this.em, async (tx) => {
      const app = tx.create(OAuthApp, {
        clientId: randomBytes(16).toString('hex'),
        account: tx.getReference(Account, options.accountId),
        name,
        kind,
        redirectUris,
        scope: scopes.join(' '),
        clientSecretSealed: clientSecret ? this.sealer.seal(clientSecret) : null,
        registeredByUserId: options.principal && isUserPrincipal(options.principal) ? options.principal.userId : null,
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
          grantId: clientCredentialsGrantId(app.clientId),
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

  /** One app of the account (any account's for the operator, `accountId` undefined); another account's is not found. */
  async get(clientId: string, accountId: string | undefined): Promise<OAuthApp> {
    const app = clientId.length <= 64 ? await this.em.findOne(OAuthApp, { clientId, ...(accountId !== undefined ? { account: accountId } : {}) }) : null;
    if (!app) throw new NotFoundError('app');
    return app;
  }

  /** Locks the app's row for a change, in the transaction `tx`. */
  private async lockApp(tx: EntityManager, clientId: string, accountId: string | undefined): Promise<OAuthApp> {
    const app = clientId.length <= 64
      ? await tx.findOne(OAuthApp, { clientId, ...(accountId !== undefined ? { account: accountId } : {}) }, { lockMode: LockMode.PESSIMISTIC_WRITE })
      : null;
    if (!app) throw new NotFoundError('app');
    return app;
  }

  /**
   * Renames the app, replaces its redirect URIs or scopes, disables or enables it. Disabling takes
   * access away at once (its tokens are refused while it is disabled, on every instance, and open
   * sockets are re-checked); enabling gives back what was not revoked meanwhile.
   */
  async update(clientId: string, changes: AppChanges, by: { accountId?: string; principal?: Principal } = {}): Promise<OAuthApp> {
    if (by.principal) policy.assertManagesCredentials(by.principal);
    const current = await this.get(clientId, by.accountId);
    const widens = (changes.redirectUris !== undefined && changes.redirectUris.map((uri) => uri.trim()).join(' ') !== current.redirectUris.join(' '))
      || (changes.scopes !== undefined && parseScopes(changes.scopes).join(' ') !== current.scope);
    if (widens) assertOwnerRightsFor(current.kind, by.principal, 'change the redirect URIs or scopes of');
    if (changes.disabled === false && current.disabledAt !== null) assertOwnerRightsFor(current.kind, by.principal, 're-enable');
    const [name, redirectUris, scopes] = valuesOrProblems(
      changes.name !== undefined ? checkedName(changes.name) : unchanged,
      changes.redirectUris !== undefined ? checkedRedirectUris(current.kind, changes.redirectUris, this.production) : unchanged,
      changes.scopes !== undefined ? checkedScopes(current.kind, changes.scopes, by.principal) : unchanged,
    );
    return this.transactions.run(this.em, async (tx) => {
      const app = await this.lockApp(tx, clientId, by.accountId);
      const fields: ChangedField[] = [];
      let narrows = false;
      if (name !== undefined && name !== app.name) {
        fields.push({ name: 'name', value: name, beforeValue: app.name });
        app.name = name;
      }
      if (redirectUris !== undefined && redirectUris.join(' ') !== app.redirectUris.join(' ')) {
        fields.push({ name: 'redirect_uris', value: redirectUris.join(' '), beforeValue: app.redirectUris.join(' ') });
        narrows ||= app.redirectUris.some((uri) => !redirectUris.includes(uri));
        app.redirectUris = redirectUris;
      }
      if (scopes !== undefined && scopes.join(' ') !== app.scope) {
        fields.push({ name: 'scope', value: scopes.join(' '), beforeValue: app.scope });
        narrows ||= app.scope.split(' ').some((scope) => !scopes.includes(scope));
        app.scope = scopes.join(' ');
      }
      if (changes.disabled !== undefined && changes.disabled !== (app.disabledAt !== null)) {
        fields.push({ name: 'disabled', value: changes.disabled, beforeValue: !changes.disabled });
        narrows ||= changes.disabled;
        app.disabledAt = changes.disabled ? new Date() : null;
      }
      if (fields.length === 0) return app;
      await tx.flush();
      recordChange(tx, {
        accountId: app.account.id,
        action: 'update',
        resource: { type: 'app', id: app.clientId, summary: app.name },
        fields,
        revokesAccess: narrows,
      });
      return app;
    }, 'oauthServer.updateApp');
  }

  /**
   * A new client secret (shown once); the one it replaces keeps working for `previousExpiresIn`
   * seconds (0: not at all), so the app's servers can be redeployed with the new one meanwhile.
   * A secret rotated out earlier and still in its grace period ends now: at most two work at once.
   */
  async rotateSecret(clientId: string, previousExpiresIn: number = PREVIOUS_SECRET_DEFAULT_SECONDS, by: { accountId?: string; principal?: Principal } = {}): Promise<{ app: OAuthApp; clientSecret: string }> {
    if (by.principal) policy.assertManagesCredentials(by.principal);
    if (!Number.isInteger(previousExpiresIn) || previousExpiresIn < 0 || previousExpiresIn > PREVIOUS_SECRET_MAX_SECONDS) {
      throw new InvalidInputError(`previousExpiresIn must be a whole number of seconds from 0 to ${PREVIOUS_SECRET_MAX_SECONDS}`);
    }
    const current = await this.get(clientId, by.accountId);
    if (!isConfidential(current.kind)) throw new InvalidInputError(`a ${current.kind} app is a public client: it has no secret to rotate`);
    const clientSecret = mintSecret('appClientSecret');
    const app = await this.transactions.run(this.em, async (tx) => {
      const app = await this.lockApp(tx, clientId, by.accountId);
      const [sealed] = await tx.execute<{ client_secret_sealed: string | null }[]>('select client_secret_sealed from oauth_apps where client_id = ?', [clientId]);
      const previousExpiresAt = previousExpiresIn > 0 ? new Date(Date.now() + previousExpiresIn * 1000) : null;
      await tx.execute(
        'update oauth_apps set client_secret_sealed = ?, previous_client_secret_sealed = ?, previous_secret_expires_at = ? where client_id = ?',
        [this.sealer.seal(clientSecret), previousExpiresAt ? sealed?.client_secret_sealed ?? null : null, previousExpiresAt, clientId],
      );
      // Client-credentials tokens issued so far were issued with the secret being replaced: they end with its grace period.
      const shortened = await tx.execute<{ affectedRows?: number }>(
        `update oauth_server_records set expires_at = least(coalesce(expires_at, ?::timestamptz), ?::timestamptz) where model = 'ClientCredentials' and grant_id = ?`,
        [previousExpiresAt ?? new Date(), previousExpiresAt ?? new Date(), clientCredentialsGrantId(clientId)],
        'run',
      );
      recordChange(tx, {
        accountId: app.account.id,
        action: 'update',
        resource: { type: 'app', id: app.clientId, summary: app.name },
        // Never the secret: that it changed, and until when the one it replaced still works.
        fields: [{ name: 'client_secret', value: 'rotated' }, { name: 'previous_secret_expires_at', value: previousExpiresAt?.toISOString() ?? null }],
        // A zero grace period ends the old secret now; tokens it obtained now end at a known time: open
        // sockets holding them are re-checked, and close then.
        revokesAccess: previousExpiresIn === 0 || (shortened.affectedRows ?? 0) > 0,
      });
      return app;
    }, 'oauthServer.rotateAppSecret');
    await this.em.refresh(app);
    return { app, clientSecret };
  }

  /** Deletes the app and revokes every delegation it holds, in one transaction. */
  async delete(clientId: string, principal?: Principal, accountId?: string): Promise<{ app: OAuthApp; revokedDelegations: number }> {
    if (principal) policy.assertManagesCredentials(principal);
    return this.transactions.run(this.em, async (tx) => {
      const app = await this.lockApp(tx, clientId, accountId);
      recordChange(tx, { accountId: app.account.id, action: 'delete', resource: { type: 'app', id: clientId, summary: app.name }, fields: [{ name: 'name', beforeValue: app.name }], revokesAccess: true });
      const revokedDelegations = await revokeClientDelegations(tx, clientId, principal);
      await tx.execute('delete from oauth_server_records where model = ? and grant_id = ?', ['ClientCredentials', clientCredentialsGrantId(clientId)]);
      await tx.remove(app).flush();
      return { app, revokedDelegations };
    }, 'oauthServer.deleteApp');
  }
}

/** The delegation an integration's client-credentials tokens answer to (it has no grant of its own). */
export function clientCredentialsGrantId(clientId: string): string {
  return `client:${clientId}`;
}

/** The app the authorization server asks about, with what it needs to know beyond client metadata. */
export async function findApp(em: EntityManager, clientId: string): Promise<OAuthApp | null> {
  return clientId.length <= 64 ? em.findOne(OAuthApp, { clientId }) : null;
}

/** oidc-provider's view of an app: read from `oauth_apps` each time, the secret unsealed. */
export async function clientMetadataFor(em: EntityManager, sealer: Sealer, clientId: string): Promise<ClientMetadata | undefined> {
  const app = await (clientId.length <= 64 ? em.findOne(OAuthApp, { clientId }, { populate: ['clientSecretSealed'] }) : null);
  // A disabled app is no client at all: every flow and every client authentication fails with invalid_client.
  if (!app || app.disabledAt !== null) return undefined;
  const common = { client_id: app.clientId, client_name: app.name };
  if (app.kind === 'integration') {
    return { ...common, client_secret: sealer.unseal(app.clientSecretSealed!), grant_types: ['client_credentials'], response_types: [], redirect_uris: [], token_endpoint_auth_method: 'client_secret_basic' };
  }
  const signIn = { ...common, redirect_uris: app.redirectUris, grant_types: ['authorization_code', 'refresh_token'], response_types: ['code' as const] };
  if (app.kind === 'mobile') return { ...signIn, application_type: 'native', token_endpoint_auth_method: 'none' };
  // A browser app: public (no secret), exact redirect URIs (a web application, not native's any-port loopback).
  if (app.kind === 'spa') return { ...signIn, application_type: 'web', token_endpoint_auth_method: 'none' };
  return { ...signIn, application_type: 'web', client_secret: sealer.unseal(app.clientSecretSealed!), token_endpoint_auth_method: 'client_secret_basic' };
}

/**
 * The secret a rotation replaced, while its grace period lasts, and when that ends: what the
 * authorization server also accepts when the presented secret is not the current one.
 */
export async function previousClientSecret(em: EntityManager, sealer: Sealer, clientId: string): Promise<{ secret: string; endsAt: Date } | undefined> {
  const [row] = await em.execute<{ previous_client_secret_sealed: string | null; previous_secret_expires_at: Date | string }[]>(
    `select previous_client_secret_sealed, previous_secret_expires_at from oauth_apps
      where client_id = ? and disabled_at is null and previous_secret_expires_at > now() and previous_client_secret_sealed is not null`,
    [clientId],
  );
  return row?.previous_client_secret_sealed ? { secret: sealer.unseal(row.previous_client_secret_sealed), endsAt: new Date(row.previous_secret_expires_at) } : undefined;
}
