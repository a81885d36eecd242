import { Field, ID, ObjectType, registerEnumType } from 'type-graphql';
import { DateTimeResolver, EmailAddressResolver } from 'graphql-scalars';
import { TimeZoneScalar, URLScalar } from '../graphql/scalars.js';
import { PlainResolver } from '../graphql/plain-resolvers.js';
import type { Context } from '../graphql/context.js';
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
  valuesConfig: {
    OWNER: { description: 'The account\'s owner: everything, and cannot be changed through the API.' },
    ADMIN: { description: 'Manages users and the account.' },
    USER: { description: 'A responder who may change what they are responsible for.' },
    LIMITED_USER: { description: 'A responder with fewer rights.' },
    OBSERVER: { description: 'Sees, without acting.' },
    RESTRICTED_ACCESS: { description: 'Sees only what they are given.' },
    READ_ONLY_USER: { description: 'Sees everything a user does, changes nothing.' },
    READ_ONLY_LIMITED_USER: { description: 'Sees what a limited user does, changes nothing.' },
  },
  description: 'A user\'s role; `OWNER` and `ADMIN` hold can_update_user. Nobody can be made `OWNER` through the API.',
});

/**
 * The GraphQL face of a user. Its sources are plain rows (reads, updates) or the `User` entity (createUser);
 * fields are read straight from them (`simpleResolvers`: no per-field type-graphql resolver, see
 * PlainResolver), those derived from configuration (`self`, `htmlUrl`, `avatarUrl`) are computed
 * by plain resolvers from either source, and other features add their field resolvers.
 */
@ObjectType('User', { description: 'A member of the account who can interact with incidents and other data.', simpleResolvers: true })
export class UserType implements Partial<Record<keyof User, unknown>> {
  @Field(() => ID, { description: 'The user\'s public id.' })
  id!: string;

  @Field({ description: 'The user\'s name.' })
  name!: string;

  @Field(() => EmailAddressResolver, { description: 'The user\'s email, unique in the account ignoring case.' })
  email!: string;

  @Field(() => TimeZoneScalar, { description: 'IANA time zone name.' })
  timeZone!: string;

  @Field({ description: 'The schedule color.' })
  color!: string;

  @Field(() => UserRoleEnum, { description: 'The user\'s role in the account.' })
  role!: UserRole;

  @Field(() => String, { nullable: true, description: 'The user\'s bio.' })
  description!: string | null;

  @Field(() => String, { description: 'The user\'s job title.', nullable: true })
  jobTitle!: string | null;

  @Field({ description: 'True while the user has an outstanding invitation.' })
  invitationSent!: boolean;

  @Field({ description: 'Whether single sign-on created the user (just-in-time provisioning).' })
  createdViaSso!: boolean;

  @Field(() => DateTimeResolver, { description: 'When the user was created.' })
  createdAt!: Date;

  @Field(() => DateTimeResolver, { description: 'When the user last changed.' })
  updatedAt!: Date;

  @Field({ description: 'False while the user is suspended (their identity provider ended their access): still listed, but no key, token, session or calendar feed of theirs works, and they cannot sign in.' })
  @PlainResolver<UserSource, Context>((user) => ('suspendedAt' in user ? user.suspendedAt === null : user.active))
  active!: boolean;

  @Field(() => String, { nullable: true, description: 'The identity provider\'s id for the user (SCIM `externalId`), unique in the account.' })
  externalId!: string | null;

  @Field({ description: 'Changes with every change of the user. Give it as `expectedVersion` to updateUser to refuse the update if someone changed the user meanwhile (CONFLICT).' })
  @PlainResolver<UserSource, Context>((user) => ('suspendedAt' in user ? String(user.updatedAt.getTime() * 1000) : user.version))
  version!: string;

  @Field(() => URLScalar, { description: 'The user\'s REST API URL.' })
  @PlainResolver<UserSource, Context>((user, context) => `${context.runtime.urls.api}/users/${user.id}`)
  self!: string;

  @Field(() => URLScalar, { description: 'Where the user is shown in the web app.' })
  @PlainResolver<UserSource, Context>((user, context) => `${context.runtime.urls.web}/users/${user.id}`)
  htmlUrl!: string;

  @Field(() => URLScalar, { description: 'A URL of the user\'s avatar image.' })
  @PlainResolver<UserSource, Context>((user, context) => user.avatarUrl ?? `${context.runtime.urls.web}/assets/blank-avatar.png`)
  avatarUrl!: string;
}

/** A user as field resolvers see it: a plain row from a read or an update, or the entity createUser returns. */
export type UserSource = UserRow | User;

export const UserConnection = connectionType<UserRow>('User', () => UserType);
