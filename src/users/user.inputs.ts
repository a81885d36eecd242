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
}

@InputType({ description: 'Up to 100 user changes, applied all or nothing.' })
export class UpdateUsersInput {
  @Field(() => [UpdateUserInput])
  users!: UpdateUserInput[];
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
