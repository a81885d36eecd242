import { OptionalProps } from '@mikro-orm/core';
import { Entity, PrimaryKey, Property } from '@mikro-orm/decorators/legacy';

export const SSO_PROTOCOLS = ['oidc', 'saml'] as const;
export type SsoProtocol = (typeof SSO_PROTOCOLS)[number];

/**
 * The one identity provider an account signs its users in with. The OIDC client secret is kept
 * sealed (see SsoSecrets); SAML needs no secret of ours, only the provider's public certificates.
 */
@Entity({ tableName: 'sso_configurations' })
export class SsoConfiguration {
  [OptionalProps]?: 'requireSso' | 'jit' | 'oidcIssuer' | 'oidcClientId' | 'oidcClientSecretSealed' | 'samlIdpEntityId' | 'samlSsoUrl' | 'samlIdpCertificates' | 'createdAt' | 'updatedAt' | 'savedByUserId' | 'savedWithOwnerRights';

  /** One configuration per account (`accounts.id`). */
  @PrimaryKey({ type: 'string', length: 7, fieldName: 'account_id' })
  accountId!: string;

  @Property({ type: 'string', length: 8 })
  protocol!: SsoProtocol;

  /** "Sign in with <displayName>" on the sign-in page. */
  @Property({ type: 'string', length: 100 })
  displayName!: string;

  @Property({ type: 'boolean' })
  requireSso: boolean = false;

  @Property({ type: 'boolean' })
  jit: boolean = false;

  @Property({ type: 'string', length: 2048, nullable: true })
  oidcIssuer: string | null = null;

  @Property({ type: 'string', length: 255, nullable: true })
  oidcClientId: string | null = null;

  @Property({ type: 'text', nullable: true, hidden: true, lazy: true })
  oidcClientSecretSealed: string | null = null;

  @Property({ type: 'string', length: 2048, nullable: true })
  samlIdpEntityId: string | null = null;

  @Property({ type: 'string', length: 2048, nullable: true })
  samlSsoUrl: string | null = null;

  /** PEM certificates the provider signs with (metadata may list more than one during a rollover). */
  @Property({ type: 'json', nullable: true })
  samlIdpCertificates: string[] | null = null;

  /** The user who last saved the configuration; null when no user did (the operator, an account key, an account-level app). */
  @Property({ type: 'string', length: 7, nullable: true })
  savedByUserId: string | null = null;

  /**
   * Last saved by the operator (`accessctl sso configure`) or by a user whose role was `owner`:
   * only then may it sign in owners and admins other than the one who saved it.
   */
  @Property({ type: 'boolean' })
  savedWithOwnerRights: boolean = false;

  @Property({ type: 'Date', columnType: 'timestamptz' })
  createdAt: Date = new Date();

  @Property({ type: 'Date', columnType: 'timestamptz', onUpdate: () => new Date() })
  updatedAt: Date = new Date();
}
