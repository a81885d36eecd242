import { OptionalProps } from '@mikro-orm/core';
import { Entity, Enum, ManyToOne, PrimaryKey, Property } from '@mikro-orm/decorators/legacy';
import { Account } from '../accounts/account.entity.js';
import { USER_ROLES, type UserRole } from '../auth/roles.js';
import { newPublicId } from '../db/public-id.js';

/**
 * A member of an account. Deleting a user keeps the row as a tombstone (`deletedAt`) so
 * its id is never issued again and references to it can still be rendered.
 */
@Entity({ tableName: 'users' })
export class User {
  [OptionalProps]?: 'id' | 'role' | 'description' | 'jobTitle' | 'avatarUrl' | 'invitationSent' | 'createdViaSso' | 'createdAt' | 'updatedAt' | 'deletedAt' | 'suspendedAt' | 'externalId' | 'emailSetByUserId' | 'emailSetWithOwnerRights';

  @PrimaryKey({ type: 'string', length: 7 })
  id: string = newPublicId();

  @ManyToOne({ entity: () => Account, fieldName: 'account_id' })
  account!: Account;

  @Property({ type: 'string', length: 100 })
  name!: string;

  @Property({ type: 'string', length: 100 })
  email!: string;

  /**
   * Who last set the email (`email-authorship.ts`): an email links an owner or admin to an
   * identity provider's subject on a first single sign-on only when set with owner rights or by
   * that user themself. Null: nobody the rule trusts (an account key, an app, SCIM, single sign-on).
   */
  @Property({ type: 'string', length: 7, nullable: true })
  emailSetByUserId: string | null = null;

  /** The email was last set by the operator (CLI, bootstrap) or by a user whose role was `owner`. */
  @Property({ type: 'boolean' })
  emailSetWithOwnerRights: boolean = false;

  @Property({ type: 'string', length: 64 })
  timeZone!: string;

  @Property({ type: 'string', length: 32 })
  color!: string;

  @Enum({ items: () => [...USER_ROLES], type: 'string' })
  role: UserRole = 'user';

  @Property({ type: 'text', nullable: true })
  description: string | null = null;

  @Property({ type: 'string', length: 100, nullable: true })
  jobTitle: string | null = null;

  @Property({ type: 'string', length: 2048, nullable: true })
  avatarUrl: string | null = null;

  @Property({ type: 'boolean' })
  invitationSent: boolean = false;

  @Property({ type: 'boolean' })
  createdViaSso: boolean = false;

  @Property({ type: 'Date', columnType: 'timestamptz' })
  createdAt: Date = new Date();

  @Property({ type: 'Date', columnType: 'timestamptz', onUpdate: () => new Date() })
  updatedAt: Date = new Date();

  @Property({ type: 'Date', columnType: 'timestamptz', nullable: true })
  deletedAt: Date | null = null;

  /** Set while the user is suspended (SCIM `active: false`): listed, but no credential of theirs works. */
  @Property({ type: 'Date', columnType: 'timestamptz', nullable: true })
  suspendedAt: Date | null = null;

  /** The identity provider's id for the user, unique among the account's live users. */
  @Property({ type: 'string', length: 100, nullable: true })
  externalId: string | null = null;
}
