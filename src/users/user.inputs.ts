import { Field, ID, InputType, ObjectType } from 'type-graphql';
import { EmailAddressResolver } from 'graphql-scalars';
import { TimeZoneScalar } from '../graphql/scalars.js';
import type { UserRole } from '../auth/roles.js';
import type { User } from './user.entity.js';
import type { UserRow } from './user.reads.js';
import { UserRoleEnum, UserType } from './user.type.js';
import { MaxLength } from '../graphql/input-bounds.js';
import { USER_FIELD_LIMITS } from './user.validation.js';

@InputType({ description: 'A new user. `role` defaults to USER; OWNER cannot be assigned.' })
export class CreateUserInput {
  @MaxLength(USER_FIELD_LIMITS.name)
  @Field({ description: 'At most 100 characters.' })
  name!: string;

  @MaxLength(USER_FIELD_LIMITS.email.max)
  @Field(() => EmailAddressResolver, { description: '6 to 100 characters, unique in the account ignoring case.' })
  email!: string;

  @MaxLength(USER_FIELD_LIMITS.timeZone)
  @Field(() => TimeZoneScalar, { nullable: true, description: 'Defaults to the account\'s time zone.' })
  timeZone?: string;

  @MaxLength(USER_FIELD_LIMITS.color)
  @Field(() => String, { nullable: true })
  color?: string;

  @Field(() => UserRoleEnum, { nullable: true })
  role?: UserRole;

  @MaxLength(USER_FIELD_LIMITS.description)
  @Field(() => String, { nullable: true })
  description?: string | null;

  @MaxLength(USER_FIELD_LIMITS.jobTitle)
  @Field(() => String, { nullable: true, description: 'At most 100 characters.' })
  jobTitle?: string | null;

  @MaxLength(USER_FIELD_LIMITS.externalId)
  @Field(() => String, { nullable: true, description: 'The identity provider\'s id for the user, unique in the account; at most 100 characters.' })
  externalId?: string | null;

  @Field(() => Boolean, { nullable: true, description: 'False creates the user suspended. Defaults to true.' })
  active?: boolean | null;
}

@InputType({ description: 'Changes to one user: only the fields given change. name, email, timeZone, color and role are omitted to keep them (null is refused); description and jobTitle take null to clear them.' })
export class UpdateUserInput {
  @Field(() => ID)
  id!: string;

  @MaxLength(USER_FIELD_LIMITS.name)
  @Field(() => String, { nullable: true })
  name?: string;

  @MaxLength(USER_FIELD_LIMITS.email.max)
  @Field(() => EmailAddressResolver, { nullable: true })
  email?: string;

  @MaxLength(USER_FIELD_LIMITS.timeZone)
  @Field(() => TimeZoneScalar, { nullable: true })
  timeZone?: string;

  @MaxLength(USER_FIELD_LIMITS.color)
  @Field(() => String, { nullable: true })
  color?: string;

  @Field(() => UserRoleEnum, { nullable: true })
  role?: UserRole;

  @MaxLength(USER_FIELD_LIMITS.description)
  @Field(() => String, { nullable: true, description: 'null clears it.' })
  description?: string | null;

  @MaxLength(USER_FIELD_LIMITS.jobTitle)
  @Field(() => String, { nullable: true, description: 'null clears it.' })
  jobTitle?: string | null;

  @MaxLength(USER_FIELD_LIMITS.externalId)
  @Field(() => String, { nullable: true, description: 'The identity provider\'s id; null clears it.' })
  externalId?: string | null;

  @Field(() => Boolean, {
    nullable: true,
    description: 'false suspends the user (needs can_update_user; not the owner): in the same transaction every delegation, OAuth grant, API key and sign-in session of theirs is revoked and their calendar key stops working. true lets them sign in again; nothing revoked comes back.',
  })
  active?: boolean | null;

  @MaxLength(40)
  @Field(() => String, { nullable: true, description: 'The `User.version` this change was based on; if the user changed since, nothing is written (CONFLICT).' })
  expectedVersion?: string | null;
}

@InputType({ description: 'Up to 100 user changes, applied all or nothing.' })
export class UpdateUsersInput {
  @Field(() => [UpdateUserInput])
  users!: UpdateUserInput[];
}

@InputType({ description: 'Users holding every value given here (at least one); the email is compared ignoring case. Each is one index look-up.' })
export class UserMatchInput {
  @MaxLength(USER_FIELD_LIMITS.searchQuery)
  @Field(() => ID, { nullable: true })
  id?: string | null;

  @MaxLength(USER_FIELD_LIMITS.email.max)
  @Field(() => String, { nullable: true })
  email?: string | null;

  @MaxLength(USER_FIELD_LIMITS.externalId)
  @Field(() => String, { nullable: true })
  externalId?: string | null;
}

@InputType()
export class DeleteUserInput {
  @Field(() => ID)
  id!: string;
}

@ObjectType()
export class CreateUserPayload {
  @Field(() => UserType)
  user!: User;
}

@ObjectType()
export class UpdateUserPayload {
  @Field(() => UserType)
  user!: UserRow;
}

@ObjectType()
export class UpdateUsersPayload {
  @Field(() => [UserType])
  users!: UserRow[];
}

@ObjectType()
export class DeleteUserPayload {
  @Field(() => ID)
  deletedUserId!: string;
}
