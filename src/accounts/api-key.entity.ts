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
  [OptionalProps]?: 'id' | 'userId' | 'readOnly' | 'description' | 'createdAt' | 'revokedAt';

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
}
