import { OptionalProps } from '@mikro-orm/core';
import { Entity, ManyToOne, PrimaryKey, Property } from '@mikro-orm/decorators/legacy';
import { Account } from '../accounts/account.entity.js';

export const APP_KINDS = ['mobile', 'web', 'integration', 'third_party'] as const;
export type AppKind = (typeof APP_KINDS)[number];

export function isAppKind(value: unknown): value is AppKind {
  return typeof value === 'string' && (APP_KINDS as readonly string[]).includes(value);
}

/**
 * A registered OAuth client of one account. `mobile` is public (PKCE, no secret); `web` and
 * `third_party` are confidential and sign users in; `integration` acts for the account (client
 * credentials). The secret is kept sealed with a key derived from the server secret, never plain.
 */
@Entity({ tableName: 'oauth_apps' })
export class OAuthApp {
  [OptionalProps]?: 'createdAt' | 'clientSecretSealed';

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

  @Property({ type: 'Date', columnType: 'timestamptz(3)' })
  createdAt: Date = new Date();
}
