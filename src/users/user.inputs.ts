import { Field, ID, InputType, ObjectType } from 'type-graphql';
import { EmailAddressResolver } from 'graphql-scalars';
import { TimeZoneScalar } from '../graphql/scalars.js';
import type { UserRole } from '../auth/roles.js';
import type { User } from './user.entity.js';
import type { UserRow } from './user.reads.js';
import { UserRoleEnum, UserType } from './user.type.js';
import { MaxLength } from '../graphql/input-bounds.js';
import { fieldProblemAt, registerInputValidator, type InputValidator } from '../graphql/input-validators.js';
import { USER_COLORS, USER_FIELD_LIMITS, userFieldProblems, type UserFields } from './user.validation.js';

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
  @Field(() => String, { description: `The color the user is shown with on schedules, one of: ${USER_COLORS.join(', ')}. Default: one of them, picked for the new user.`, nullable: true })
  color?: string;

  @Field(() => UserRoleEnum, { description: 'The user\'s role; default USER; OWNER cannot be assigned.', nullable: true })
  role?: UserRole;

  @MaxLength(USER_FIELD_LIMITS.description)
  @Field(() => String, { description: 'A free-text bio, at most 1024 characters.', nullable: true })
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
  @Field(() => ID, { description: 'The user to change.' })
  id!: string;

  @MaxLength(USER_FIELD_LIMITS.name)
  @Field(() => String, { description: 'The new name, 1 to 100 characters.', nullable: true })
  name?: string;

  @MaxLength(USER_FIELD_LIMITS.email.max)
  @Field(() => EmailAddressResolver, { description: 'The new email, unique in the account ignoring case.', nullable: true })
  email?: string;

  @MaxLength(USER_FIELD_LIMITS.timeZone)
  @Field(() => TimeZoneScalar, { description: 'The new IANA time zone.', nullable: true })
  timeZone?: string;

  @MaxLength(USER_FIELD_LIMITS.color)
  @Field(() => String, { description: `The new schedule color, one of: ${USER_COLORS.join(', ')} (a color the user already has, stored before this list, may be given unchanged).`, nullable: true })
  color?: string;

  @Field(() => UserRoleEnum, { description: 'The new role (can_update_user only; never OWNER, never the owner\'s).', nullable: true })
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

// The service's own field checks also join a refusal of the input's scalars or bounds, so a form hears of every bad field at once.
const fieldChecks = (creating: boolean): InputValidator => (value, site) =>
  userFieldProblems(value as UserFields, { creating }).map((problem) => fieldProblemAt(site, problem.field, problem.code, problem.detail));
registerInputValidator('CreateUserInput', fieldChecks(true));
registerInputValidator('UpdateUserInput', fieldChecks(false));

@InputType({ description: 'Up to 100 user changes, applied all or nothing.' })
export class UpdateUsersInput {
  @Field(() => [UpdateUserInput], { description: '1 to 100 changes, each to a different user.' })
  users!: UpdateUserInput[];
}

@InputType({ description: 'Users holding every value given here (at least one); the email is compared ignoring case. Each is one index look-up.' })
export class UserMatchInput {
  @MaxLength(USER_FIELD_LIMITS.searchQuery)
  @Field(() => ID, { description: 'A user id.', nullable: true })
  id?: string | null;

  @MaxLength(USER_FIELD_LIMITS.email.max)
  @Field(() => String, { description: 'An email, compared ignoring case.', nullable: true })
  email?: string | null;

  @MaxLength(USER_FIELD_LIMITS.externalId)
  @Field(() => String, { description: 'The identity provider\'s id of the user.', nullable: true })
  externalId?: string | null;
}

@InputType({ description: 'The user to delete.' })
export class DeleteUserInput {
  @Field(() => ID, { description: 'The user to delete.' })
  id!: string;
}

@ObjectType({ description: 'What createUser created.' })
export class CreateUserPayload {
  @Field(() => UserType, { description: 'The new user.' })
  user!: User;
}

@ObjectType({ description: 'What updateUser changed.' })
export class UpdateUserPayload {
  @Field(() => UserType, { description: 'The user as it is now.' })
  user!: UserRow;
}

@ObjectType({ description: 'What updateUsers changed.' })
export class UpdateUsersPayload {
  @Field(() => [UserType], { description: 'The users as they are now, in request order.' })
  users!: UserRow[];
}

@ObjectType({ description: 'What deleteUser deleted.' })
export class DeleteUserPayload {
  @Field(() => ID, { description: 'The id of the deleted user (evict it from a client cache).' })
  deletedUserId!: string;
}
