import { OptionalProps } from '@mikro-orm/core';
import { Entity, ManyToOne, PrimaryKey, Property } from '@mikro-orm/decorators/legacy';
import { Account } from '../accounts/account.entity.js';

export const APP_KINDS = ['mobile', 'web', 'integration', 'third_party', 'spa'] as const;
export type AppKind = (typeof APP_KINDS)[number];

/**
 * Kinds that sign people in without a consent page: the product's own web app always, its mobile and
 * browser apps right after a sign-in in the same flow. Only owner rights register or widen them.
 */
export const CONSENTLESS_KINDS: ReadonlySet<AppKind> = new Set(['web', 'mobile', 'spa']);

export function isAppKind(value: unknown): value is AppKind {
  return typeof value === 'string' && (APP_KINDS as readonly string[]).includes(value);
}

/**
 * A registered OAuth client of one account. `mobile` and `spa` (a browser app) are public (PKCE, no
 * secret); `web` and `third_party` are confidential and sign users in; `integration` acts for the
 * account (client credentials). The secret is kept sealed with a key derived from the server
 * secret, never plain; after a rotation the previous one is kept (sealed) until its grace period ends.
 */
@Entity({ tableName: 'oauth_apps' })
export class OAuthApp {
  [OptionalProps]?: 'createdAt' | 'clientSecretSealed' | 'disabledAt' | 'previousClientSecretSealed' | 'previousSecretExpiresAt' | 'registeredByUserId';

  @PrimaryKey({ type: 'string', length: 64 })
  clientId!: string;

  @ManyToOne({ entity: () => Account, fieldName: 'account_id' })
  account!: Account;

  @Property({ type: 'string', length: 100 })
  name!: string;

  @Property({ type: 'string', length: 16 })
  kind!: AppKind;

  @Property({ type: 'json' })
  redirectUris!: string[];

  /** Space-separated scopes the app may ask for. */
  @Property({ type: 'text' })
  scope!: string;

  @Property({ type: 'text', nullable: true, hidden: true, lazy: true })
  clientSecretSealed: string | null = null;

  /** The secret a rotation replaced: still accepted until `previousSecretExpiresAt`. */
  @Property({ type: 'text', nullable: true, hidden: true, lazy: true })
  previousClientSecretSealed: string | null = null;

  @Property({ type: 'Date', columnType: 'timestamptz(3)', nullable: true })
  previousSecretExpiresAt: Date | null = null;

  /** While set, the app's tokens are refused and its flows fail; clearing it enables the app again. */
  @Property({ type: 'Date', columnType: 'timestamptz(3)', nullable: true })
  disabledAt: Date | null = null;

  @Property({ type: 'Date', columnType: 'timestamptz(3)' })
  createdAt: Date = new Date();

  /** The user whose credential registered the app; null when the operator did (or before this was kept). */
  @Property({ type: 'string', length: 7, nullable: true })
  registeredByUserId: string | null = null;
}
