import { Field, ID, ObjectType, registerEnumType } from 'type-graphql';
import { DateTimeResolver, EmailAddressResolver } from 'graphql-scalars';
import { TimeZoneScalar } from '../graphql/scalars.js';
import type { UserRole } from '../auth/roles.js';
import { connectionType } from '../graphql/connection.js';
import type { User } from './user.entity.js';
import type { UserRow } from './user.reads.js';

export const UserRoleEnum = {
  OWNER: 'owner',
  ADMIN: 'admin',
  USER: 'user',
  LIMITED_USER: 'limited_user',
  OBSERVER: 'observer',
  RESTRICTED_ACCESS: 'restricted_access',
  READ_ONLY_USER: 'read_only_user',
  READ_ONLY_LIMITED_USER: 'read_only_limited_user',
} as const satisfies Record<string, UserRole>;

registerEnumType(UserRoleEnum, {
  name: 'UserRole',
  description: 'A user\'s role; `OWNER` and `ADMIN` hold can_update_user. Nobody can be made `OWNER` through the API.',
});

/**
 * The GraphQL face of a user. Resolvers return plain rows (`UserRow`) or the `User` entity; fields derived from
 * configuration (`self`, `htmlUrl`, ...) are field resolvers, and other features add theirs.
 */
@ObjectType('User', { description: 'A member of the account who can interact with incidents and other data.' })
export class UserType implements Partial<Record<keyof User, unknown>> {
  @Field(() => ID)
  id!: string;

  @Field()
  name!: string;

  @Field(() => EmailAddressResolver)
  email!: string;

  @Field(() => TimeZoneScalar, { description: 'IANA time zone name.' })
  timeZone!: string;

  @Field({ description: 'The schedule color.' })
  color!: string;

  @Field(() => UserRoleEnum)
  role!: UserRole;

  @Field(() => String, { nullable: true, description: 'The user\'s bio.' })
  description!: string | null;

  @Field(() => String, { nullable: true })
  jobTitle!: string | null;

  @Field({ description: 'True while the user has an outstanding invitation.' })
  invitationSent!: boolean;

  @Field()
  createdViaSso!: boolean;

  @Field(() => DateTimeResolver)
  createdAt!: Date;
}

/** A user as field resolvers see it: a plain row from a read or an update, or the entity createUser returns. */
export type UserSource = UserRow | User;

export const UserConnection = connectionType<UserRow>('User', () => UserType);
