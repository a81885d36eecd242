import { OptionalProps } from '@mikro-orm/core';
import { Entity, ManyToOne, PrimaryKey, Property } from '@mikro-orm/decorators/legacy';
import { Account } from '../accounts/account.entity.js';
import { newPublicId } from '../db/public-id.js';

/**
 * A long-lived bearer credential an identity provider holds to provision one account's users over
 * SCIM (and nothing else). Only the SHA-256 digest is kept; the token is shown once, at creation.
 */
@Entity({ tableName: 'provisioning_tokens' })
export class ProvisioningToken {
  [OptionalProps]?: 'id' | 'description' | 'createdAt' | 'revokedAt' | 'lastUsedAt' | 'tokenTail' | 'createdWithOwnerRights';

  @PrimaryKey({ type: 'string', length: 7 })
  id: string = newPublicId();

  @ManyToOne({ entity: () => Account, fieldName: 'account_id' })
  account!: Account;

  @Property({ type: 'string', length: 64, unique: true, hidden: true })
  tokenDigest!: string;

  @Property({ type: 'string', length: 255, nullable: true })
  description: string | null = null;

  @Property({ type: 'Date', columnType: 'timestamptz' })
  createdAt: Date = new Date();

  @Property({ type: 'Date', columnType: 'timestamptz', nullable: true })
  revokedAt: Date | null = null;

  /** At most a minute stale, written off the request path (credential-usage.ts). */
  @Property({ type: 'Date', columnType: 'timestamptz', nullable: true })
  lastUsedAt: Date | null = null;

  /** Created by the owner or the operator: it may change admins' and the owner's emails (nothing acts above its creator). */
  @Property({ type: 'boolean' })
  createdWithOwnerRights: boolean = false;

  /** The token's last 4 characters; null for tokens issued before it was kept. */
  @Property({ type: 'string', length: 4, nullable: true })
  tokenTail: string | null = null;
}
