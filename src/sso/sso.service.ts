import type { EntityManager } from '@mikro-orm/sql';
import { authorshipOf, type Writer } from '../auth/owner-rights.js';
import { recordChange } from '../db/change-journal.js';
import { endSingleSignOnSessions } from '../oauth-delegations/user-access.js';
import type { TransactionRunner } from '../db/transaction.js';
import { NotFoundError } from '../errors/domain-errors.js';
import { Sealer } from '../oauth-server/sealing.js';
import { SsoConfiguration, type SsoProtocol } from './sso-configuration.entity.js';
import { providerSettings } from './sso-settings-checks.js';

export interface OidcProviderInput {
  issuer: string;
  clientId: string;
  clientSecret: string;
}

export interface ConfigureSsoInput {
  accountId: string;
  displayName?: string;
  oidc?: OidcProviderInput;
  samlMetadataXml?: string;
  requireSso: boolean;
  jit: boolean;
  /**
   * Who saves it: the operator, or the request's principal. Only a configuration saved with owner
   * rights (the operator, a user whose role is owner) signs in owners and admins other than the
   * user who saved it (`sso.matching.ts`), so an admin cannot sign in as the owner or another
   * admin through a provider they configured.
   */
  savedBy: Writer;
}

export interface SsoConfigurationSummary {
  protocol: SsoProtocol;
  displayName: string;
  requireSso: boolean;
  jit: boolean;
  oidcIssuer: string | null;
  oidcClientId: string | null;
  oidcClientSecretStored: boolean;
  samlIdpEntityId: string | null;
  samlSsoUrl: string | null;
  savedByUserId: string | null;
  savedWithOwnerRights: boolean;
  updatedAt: Date;
}

/** The settings the sign-in needs, the secret unsealed: never leaves the sso module. */
export interface SsoSettings {
  accountId: string;
  protocol: SsoProtocol;
  displayName: string;
  requireSso: boolean;
  jit: boolean;
  /** Who last saved it, as the rule for owners and admins weighs it (`sso.matching.ts`). */
  saved: { userId: string | null; ownerRights: boolean };
  oidc?: { issuer: string; clientId: string; clientSecret: string | undefined };
  saml?: { idpEntityId: string; ssoUrl: string; certificates: string[] };
}

/** The client secret is sealed with its own derived key, like the authorization server's secrets. */
export function ssoSecretSealer(serverSecret: Buffer): Sealer {
  return new Sealer(serverSecret, 'sso-client-secrets');
}

/** What identifies the provider that vouches for a sign-in: its protocol, issuer or entity id, client id and signing certificates. */
function providerIdentity(configuration: SsoConfiguration): string {
  return JSON.stringify([configuration.protocol, configuration.oidcIssuer, configuration.oidcClientId, configuration.samlIdpEntityId, configuration.samlIdpCertificates]);
}

/** Configures, shows and removes an account's identity provider. */
export class SsoService {
  constructor(
    private readonly em: EntityManager,
    private readonly transactions: TransactionRunner,
    private readonly sealer: Sealer,
  ) {}

  /**
   * `verifyIssuer` (the API's path) fetches the OIDC issuer's discovery document first, guarded
   * against SSRF (`sso.discovery.ts`); nothing is written when it fails.
   */
  async configure(input: ConfigureSsoInput, options: { verifyIssuer?: (issuer: string) => Promise<unknown> } = {}): Promise<SsoConfiguration> {
    const { oidc, saml } = providerSettings({ oidc: input.oidc, saml: input.samlMetadataXml !== undefined ? { metadataXml: input.samlMetadataXml } : undefined });
    if (oidc && options.verifyIssuer) await options.verifyIssuer(oidc.issuer);
    const displayName = (input.displayName?.trim() || new URL(oidc?.issuer ?? saml!.ssoUrl).hostname).slice(0, 100);
    return this.transactions.run(this.em, async (tx) => {
      const [account] = await tx.execute<{ id: string }[]>('select id from accounts where id = ?', [input.accountId]);
      if (!account) throw new NotFoundError('account');
      const saved = authorshipOf(input.savedBy);
      const existing = await tx.findOne(SsoConfiguration, { accountId: input.accountId });
      const providerBefore = existing && providerIdentity(existing);
      const configuration = existing ?? tx.create(SsoConfiguration, { accountId: input.accountId, protocol: oidc ? 'oidc' : 'saml', displayName });
      Object.assign(configuration, {
        protocol: oidc ? 'oidc' : 'saml',
        displayName,
        requireSso: input.requireSso,
        jit: input.jit,
        oidcIssuer: oidc?.issuer ?? null,
        oidcClientId: oidc?.clientId ?? null,
        oidcClientSecretSealed: oidc?.secret ? this.sealer.seal(oidc.secret) : null,
        samlIdpEntityId: saml?.entityId ?? null,
        samlSsoUrl: saml?.ssoUrl ?? null,
        samlIdpCertificates: saml?.certificates ?? null,
        savedByUserId: saved.userId,
        savedWithOwnerRights: saved.ownerRights,
        updatedAt: new Date(),
      } satisfies Partial<SsoConfiguration>);
      await tx.persist(configuration).flush();
      // Another provider (or another key of its) no longer vouches for the sessions the old one made.
      const endedSessions = providerBefore !== null && providerBefore !== providerIdentity(configuration) ? await endSingleSignOnSessions(tx, input.accountId) : 0;
      // Who may sign in, and how, changed: recorded like any access change (never the secret, only that one is stored).
      recordChange(tx, {
        accountId: input.accountId,
        action: existing ? 'update' : 'create',
        resource: { type: 'sso_configuration', id: input.accountId, summary: displayName },
        fields: [
          { name: 'protocol', value: configuration.protocol },
          { name: 'issuer', value: oidc?.issuer ?? saml!.entityId },
          { name: 'require_sso', value: input.requireSso },
          { name: 'jit', value: input.jit },
          { name: 'client_secret_stored', value: Boolean(oidc?.secret) },
          { name: 'saved_with_owner_rights', value: saved.ownerRights },
          ...(endedSessions > 0 ? [{ name: 'sign_in_sessions_ended', value: endedSessions }] : []),
        ],
      });
      return configuration;
    }, 'sso.configure');
  }

  /** The configuration as an administrator may see it: everything but the secret. */
  async show(accountId: string): Promise<SsoConfigurationSummary | null> {
    const configuration = await this.em.fork().findOne(SsoConfiguration, { accountId }, { populate: ['oidcClientSecretSealed'] });
    if (!configuration) return null;
    return {
      protocol: configuration.protocol,
      displayName: configuration.displayName,
      requireSso: configuration.requireSso,
      jit: configuration.jit,
      oidcIssuer: configuration.oidcIssuer,
      oidcClientId: configuration.oidcClientId,
      oidcClientSecretStored: configuration.oidcClientSecretSealed !== null,
      samlIdpEntityId: configuration.samlIdpEntityId,
      samlSsoUrl: configuration.samlSsoUrl,
      savedByUserId: configuration.savedByUserId,
      savedWithOwnerRights: configuration.savedWithOwnerRights,
      updatedAt: configuration.updatedAt,
    };
  }

  /** Removes the provider: the account's users sign in with passwords again. */
  async disable(accountId: string): Promise<boolean> {
    return this.transactions.run(this.em, async (tx) => {
      const removed = await tx.nativeDelete(SsoConfiguration, { accountId });
      await tx.execute('delete from sso_round_trips where account_id = ?', [accountId]);
      const endedSessions = removed > 0 ? await endSingleSignOnSessions(tx, accountId) : 0;
      if (removed > 0) {
        recordChange(tx, {
          accountId,
          action: 'delete',
          resource: { type: 'sso_configuration', id: accountId },
          ...(endedSessions > 0 ? { fields: [{ name: 'sign_in_sessions_ended', value: endedSessions }] } : {}),
        });
      }
      return removed > 0;
    }, 'sso.disable');
  }

  /** The sign-in's view of the configuration, secret unsealed. */
  async settings(accountId: string): Promise<SsoSettings | undefined> {
    const configuration = await this.em.fork().findOne(SsoConfiguration, { accountId }, { populate: ['oidcClientSecretSealed'] });
    if (!configuration) return undefined;
    return {
      accountId,
      protocol: configuration.protocol,
      displayName: configuration.displayName,
      requireSso: configuration.requireSso,
      jit: configuration.jit,
      saved: { userId: configuration.savedByUserId, ownerRights: configuration.savedWithOwnerRights },
      oidc: configuration.protocol === 'oidc'
        ? { issuer: configuration.oidcIssuer!, clientId: configuration.oidcClientId!, clientSecret: configuration.oidcClientSecretSealed ? this.sealer.unseal(configuration.oidcClientSecretSealed) : undefined }
        : undefined,
      saml: configuration.protocol === 'saml'
        ? { idpEntityId: configuration.samlIdpEntityId!, ssoUrl: configuration.samlSsoUrl!, certificates: configuration.samlIdpCertificates ?? [] }
        : undefined,
    };
  }
}
