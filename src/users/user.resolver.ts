import { Arg, Args, ArgsType, Ctx, Field, ID, Info, Int, Mutation, Query, Resolver } from 'type-graphql';
import type { GraphQLResolveInfo } from 'graphql';
import { checkPageArgs } from '../graphql/connection.js';
import { CURSOR_MAX_LENGTH } from '../graphql/cursor.js';
import { MaxLength } from '../graphql/input-bounds.js';
import { requirePrincipal, type Context } from '../graphql/context.js';
import { readPath } from '../db/read-path.js';
import { selectedFieldNames } from '../graphql/selection.js';
import { UserReads, type UserRow } from './user.reads.js';
import { MAX_PAGE_SIZE, UsersService } from './user.service.js';
import { UserConnection, UserType } from './user.type.js';
import { USER_FIELD_LIMITS } from './user.validation.js';
import {
  CreateUserInput,
  CreateUserPayload,
  DeleteUserInput,
  DeleteUserPayload,
  UpdateUserInput,
  UpdateUserPayload,
  UpdateUsersInput,
  UpdateUsersPayload,
  UserMatchInput,
} from './user.inputs.js';
import { InvalidInputError } from '../errors/domain-errors.js';

const MAX_USER_MATCHES = 20;

function checkMatches(args: UsersArgs): void {
  if (!args.match) return;
  if (args.query != null) throw new InvalidInputError('give either query or match, not both');
  if (args.match.length > MAX_USER_MATCHES) throw new InvalidInputError(`match may hold at most ${MAX_USER_MATCHES} elements`);
  args.match.forEach((term, index) => {
    if (term.id == null && term.email == null && term.externalId == null) throw new InvalidInputError(`match[${index}] must give id, email or externalId`);
  });
}

const USERS_CURSOR = 'users';

@ArgsType()
class UsersArgs {
  @MaxLength(USER_FIELD_LIMITS.searchQuery)
  @Field(() => String, { nullable: true, description: `Case-insensitive substring of the name or email, at most ${USER_FIELD_LIMITS.searchQuery} characters.` })
  query?: string | null;

  @Field(() => [UserMatchInput], {
    nullable: true,
    description: `Only users matching any of these (at most ${MAX_USER_MATCHES}; an empty list matches nobody); not together with \`query\`. For look-ups by email or the identity provider's id.`,
  })
  match?: UserMatchInput[] | null;

  @Field(() => Int, { defaultValue: 25, description: 'Page size, 1 to 100.' })
  first!: number;

  @MaxLength(CURSOR_MAX_LENGTH)
  @Field(() => String, { nullable: true, description: 'An `endCursor` from a previous page.' })
  after?: string | null;

  @Field(() => Int, { nullable: true, description: 'Skip this many users instead of using `after` (classic offset paging); first + offset at most 10000.' })
  offset?: number | null;
}

/** Presenting reads (plain rows, selected columns); mutations go through UsersService. */
function userReads(context: Context): UserReads {
  return new UserReads(readPath(context.em), requirePrincipal(context));
}

export function usersService(context: Context): UsersService {
  return new UsersService(context.em, requirePrincipal(context), context.transactions, { deleted: context.runtime.userDeletedHooks, suspended: context.runtime.userSuspendedHooks });
}

@Resolver(() => UserType)
export class UserResolver {
  @Query(() => UserType, { description: 'The user the credential acts as; an account API key has none (BAD_USER_INPUT).' })
  viewer(@Ctx() context: Context, @Info() info: GraphQLResolveInfo): Promise<UserRow> {
    return userReads(context).viewer(selectedFieldNames(info));
  }

  @Query(() => UserType, { description: 'A user of the account; NOT_FOUND for deleted users and other accounts\' ids.' })
  user(@Arg('id', () => ID, { description: 'The user\'s id.' }) id: string, @Ctx() context: Context, @Info() info: GraphQLResolveInfo): Promise<UserRow> {
    return userReads(context).get(id, selectedFieldNames(info));
  }

  @Query(() => UserConnection, { description: 'Users of the account, ordered by name then id.' })
  async users(@Args(() => UsersArgs) args: UsersArgs, @Ctx() context: Context, @Info() info: GraphQLResolveInfo) {
    const offset = checkPageArgs(args, MAX_PAGE_SIZE);
    checkMatches(args);
    // A page of a search continues only that search.
    const scope = { query: args.query?.trim() || null, match: args.match };
    const after = args.after ? context.runtime.cursors.decode<{ n: string; i: string }>(USERS_CURSOR, args.after, 'after', scope) : undefined;
    const page = userReads(context).list(
      { query: args.query, match: args.match, first: args.first, offset, after: after ? { name: after.n, id: after.i } : undefined },
      selectedFieldNames(info, ['nodes'], ['edges', 'node']),
    );
    return UserConnection.deferred({
      ...page,
      hasPreviousPage: Boolean(after) || offset > 0,
      cursorOf: (user) => context.runtime.cursors.encode(USERS_CURSOR, { n: user.name, i: user.id }, scope),
    });
  }

  @Mutation(() => CreateUserPayload, { description: 'Creates a user of the account. can_update_user.' })
  async createUser(@Arg('input', () => CreateUserInput, { description: 'What to change: see the input type.' }) input: CreateUserInput, @Ctx() context: Context): Promise<CreateUserPayload> {
    return { user: await usersService(context).create(input) };
  }

  @Mutation(() => UpdateUserPayload, { description: 'Users may change their own profile (not their role); can_update_user changes anyone, except that only the owner changes the owner\'s email and only that admin or the owner an admin\'s (a provisioning token, over SCIM, may change any). FORBIDDEN comes before any other answer.' })
  async updateUser(@Arg('input', () => UpdateUserInput, { description: 'What to change: see the input type.' }) input: UpdateUserInput, @Ctx() context: Context, @Info() info: GraphQLResolveInfo): Promise<UpdateUserPayload> {
    return { user: await usersService(context).update(input, selectedFieldNames(info, ['user'])) };
  }

  @Mutation(() => UpdateUsersPayload, { description: 'All or nothing: one invalid element fails the whole call and changes nothing.' })
  async updateUsers(@Arg('input', () => UpdateUsersInput, { description: 'What to change: see the input type.' }) input: UpdateUsersInput, @Ctx() context: Context, @Info() info: GraphQLResolveInfo): Promise<UpdateUsersPayload> {
    return { users: await usersService(context).updateMany(input.users, selectedFieldNames(info, ['users'])) };
  }

  @Mutation(() => DeleteUserPayload, { description: 'Revokes the user\'s keys and delegations, invalidates the calendar key and removes subscriptions, in one transaction.' })
  async deleteUser(@Arg('input', () => DeleteUserInput, { description: 'What to change: see the input type.' }) input: DeleteUserInput, @Ctx() context: Context): Promise<DeleteUserPayload> {
    await usersService(context).delete(input.id);
    return { deletedUserId: input.id };
  }
}
