import { OptionalProps } from '@mikro-orm/core';
import { Entity, ManyToOne, PrimaryKey, Property } from '@mikro-orm/decorators/legacy';
import { newPublicId } from '../db/public-id.js';
import { Account } from './account.entity.js';

/**
 * An API key: account-level (full or read-only) when `userId` is null, else acting as that user.
 * Only the SHA-256 digest of the key is kept; the key itself is shown once, at creation.
 */
@Entity({ tableName: 'api_keys' })
export class ApiKey {
  [OptionalProps]?: 'id' | 'userId' | 'readOnly' | 'description' | 'createdAt' | 'revokedAt' | 'createdByUserId' | 'expiresAt' | 'lastUsedAt' | 'tokenTail';

  @PrimaryKey({ type: 'string', length: 7 })
  id: string = newPublicId();

  @ManyToOne({ entity: () => Account, fieldName: 'account_id' })
  account!: Account;

  /** A plain column rather than a relation: the users feature owns users, accounts only points at one. */
  @Property({ type: 'string', length: 7, nullable: true })
  userId: string | null = null;

  @Property({ type: 'boolean' })
  readOnly: boolean = false;

  @Property({ type: 'string', length: 64, unique: true, hidden: true })
  tokenDigest!: string;

  @Property({ type: 'string', length: 255, nullable: true })
  description: string | null = null;

  @Property({ type: 'Date', columnType: 'timestamptz' })
  createdAt: Date = new Date();

  @Property({ type: 'Date', columnType: 'timestamptz', nullable: true })
  revokedAt: Date | null = null;

  /** The user whose credential created the key; null when an account key or the operator CLI did. */
  @Property({ type: 'string', length: 7, nullable: true })
  createdByUserId: string | null = null;

  /** When the key stops working by itself (a chosen expiry, or a roll's grace period); null: never. */
  @Property({ type: 'Date', columnType: 'timestamptz', nullable: true })
  expiresAt: Date | null = null;

  /** When the key was rolled over: from then on, in its grace period, it manages no credential and cannot be rolled again. */
  @Property({ type: 'Date', columnType: 'timestamptz', nullable: true })
  supersededAt: Date | null = null;

  /** At most a minute stale: written off the request path, at most once a minute per key (api-key-usage.ts). */
  @Property({ type: 'Date', columnType: 'timestamptz', nullable: true })
  lastUsedAt: Date | null = null;

  /** The secret's last 4 characters, to tell keys apart; null for keys issued before it was kept. */
  @Property({ type: 'string', length: 4, nullable: true })
  tokenTail: string | null = null;
}
