import DataLoader from 'dataloader';
import { Arg, Args, ArgsType, Ctx, Field, FieldResolver, ID, Int, Mutation, Query, Resolver, Root } from 'type-graphql';
import { policy } from '../auth/policy.js';
import { readPath } from '../db/read-path.js';
import { PUBLIC_ID_PATTERN } from '../db/public-id.js';
import { InvalidInputError } from '../errors/domain-errors.js';
import { checkPageArgs } from '../graphql/connection.js';
import { CURSOR_MAX_LENGTH } from '../graphql/cursor.js';
import { MaxLength } from '../graphql/input-bounds.js';
import { requirePrincipal, type Context } from '../graphql/context.js';
import { userRows, type UserRow } from '../users/user.reads.js';
import { EVERY_USER_COLUMN, LIVE_USER } from '../users/user.sql.js';
import { UserType } from '../users/user.type.js';
import type { ApiKey } from './api-key.entity.js';
import {
  ApiKeyConnection,
  ApiKeyKindEnum,
  ApiKeyObject,
  ApiKeyStatusEnum,
  CreateApiKeyInput,
  CreateApiKeyPayload,
  RevokeApiKeyInput,
  RevokeApiKeyPayload,
  RollApiKeyInput,
  RollApiKeyPayload,
} from './api-key.type.js';
import { ApiKeysService, MAX_API_KEY_PAGE_SIZE, apiKeyKindOf, apiKeyStatusOf, type ApiKeyKind, type ApiKeyPage, type ApiKeyPageRequest, type ApiKeyStatus } from './api-keys.service.js';

const API_KEYS_CURSOR = 'api-keys';

@ArgsType()
class ApiKeyPageArgs {
  @Field(() => [ApiKeyStatusEnum], { nullable: true, description: 'Only keys in these statuses (default: all).' })
  statuses?: ApiKeyStatus[] | null;

  @Field(() => Int, { defaultValue: 25, description: `Page size, 1 to ${MAX_API_KEY_PAGE_SIZE}.` })
  first!: number;

  @MaxLength(CURSOR_MAX_LENGTH)
  @Field(() => String, { nullable: true, description: 'An `endCursor` from a previous page of the same query (same `userId` and `statuses`).' })
  after?: string | null;
}

@ArgsType()
class AccountApiKeyPageArgs extends ApiKeyPageArgs {
  @Field(() => ID, { nullable: true, description: 'Only this user\'s keys (the user themself or account_admin); omitted: every key of the account (account_admin).' })
  userId?: string | null;
}

function apiKeysService(context: Context): ApiKeysService {
  return new ApiKeysService(context.em, requirePrincipal(context), context.transactions);
}

/** Newest first; a cursor holds the last row's (created_at, id) and the query it belongs to, signed. */
function pageRequest(args: ApiKeyPageArgs, userId: string | null, context: Context): ApiKeyPageRequest {
  checkPageArgs(args, MAX_API_KEY_PAGE_SIZE);
  const statuses = args.statuses?.length ? [...new Set(args.statuses)].sort() : null;
  const query = JSON.stringify([userId, statuses]);
  let after: ApiKeyPageRequest['after'];
  if (args.after) {
    const position = context.runtime.cursors.decode<{ c?: unknown; i?: unknown; q?: unknown }>(API_KEYS_CURSOR, args.after, 'after');
    const createdAt = typeof position.c === 'string' ? new Date(position.c) : undefined;
    if (!createdAt || Number.isNaN(createdAt.getTime()) || typeof position.i !== 'string' || !PUBLIC_ID_PATTERN.test(position.i)) {
      throw new InvalidInputError('after is not a valid cursor for this list');
    }
    if (position.q !== query) throw new InvalidInputError('after is a cursor of another query (other userId or statuses)');
    after = { createdAt, id: position.i };
  }
  return { userId, statuses, first: args.first, after };
}

function connection(page: ApiKeyPage, request: ApiKeyPageRequest, context: Context) {
  const query = JSON.stringify([request.userId ?? null, request.statuses ?? null]);
  return ApiKeyConnection.deferred({
    slice: () => page.slice(),
    countTotal: () => page.countTotal(),
    hasPreviousPage: request.after !== undefined,
    cursorOf: (key) => context.runtime.cursors.encode(API_KEYS_CURSOR, { c: key.createdAt.toISOString(), i: key.id, q: query }),
  });
}

const LIVE_USERS_BY_ID = `select ${EVERY_USER_COLUMN} from users where id = any(?) and account_id = ? and ${LIVE_USER}`;

/** The account's live users named by keys on this response, in one statement; a deleted user is null. */
function usersLoader(context: Context): DataLoader<string, UserRow | null> {
  return context.loaders.get('api-key-users', () =>
    new DataLoader<string, UserRow | null>(async (ids) => {
      const rows = await userRows(readPath(context.em).rows<UserRow>(
        LIVE_USERS_BY_ID,
        [[...ids], requirePrincipal(context).accountId],
      ));
      const byId = new Map(rows.map((row) => [row.id, row]));
      return ids.map((id) => byId.get(id) ?? null);
    }),
  );
}

@Resolver(() => ApiKeyObject)
export class ApiKeyResolver {
  @Query(() => ApiKeyConnection, {
    nullable: true,
    description: 'API keys, newest first: the account\'s (account_admin), or with `userId` that user\'s (the user themself or account_admin). Never their secrets. Nullable: forbidden, it is null with its error and the rest of the page is served.',
  })
  async apiKeys(@Args(() => AccountApiKeyPageArgs) args: AccountApiKeyPageArgs, @Ctx() context: Context) {
    const request = pageRequest(args, args.userId ?? null, context);
    return connection(await apiKeysService(context).list(request), request, context);
  }

  @Mutation(() => CreateApiKeyPayload, {
    description: 'Creates an API key; its secret is in the answer only. Account keys: owners, admins, full-access account keys. '
      + 'USER keys: the user themself (not read-only or restricted roles), or can_update_user for another user (the owner\'s only by the owner). '
      + 'A token needs every scope: a key is limited by none.',
  })
  async createApiKey(@Arg('input', () => CreateApiKeyInput, { description: 'The kind, user, description and expiry of the new key.' }) input: CreateApiKeyInput, @Ctx() context: Context): Promise<CreateApiKeyPayload> {
    const issued = await apiKeysService(context).create({ kind: input.kind, userId: input.userId, description: input.description, expiresAt: input.expiresAt });
    return { apiKey: issued.apiKey, secret: issued.secret };
  }

  @Mutation(() => RevokeApiKeyPayload, {
    description: 'Revokes an API key before answering: it is refused from the next request on, on every instance, and its open sockets close. '
      + 'Account keys: account_admin; USER keys: the user themself (not read-only or restricted) or an owner, admin or full-access account key.',
  })
  async revokeApiKey(@Arg('input', () => RevokeApiKeyInput, { description: 'The key to revoke.' }) input: RevokeApiKeyInput, @Ctx() context: Context): Promise<RevokeApiKeyPayload> {
    return { apiKey: await apiKeysService(context).revoke(input.id) };
  }

  @Mutation(() => RollApiKeyPayload, {
    description: 'Replaces an ACTIVE API key by a new one (same kind, user, description, expiry); the old one keeps working for `previousExpiresIn` seconds. Same rights as creating the key.',
  })
  async rollApiKey(@Arg('input', () => RollApiKeyInput, { description: 'The key to replace, and how long the old key keeps working.' }) input: RollApiKeyInput, @Ctx() context: Context): Promise<RollApiKeyPayload> {
    const rolled = await apiKeysService(context).roll(input.id, input.previousExpiresIn);
    return { apiKey: rolled.apiKey, secret: rolled.secret, previous: rolled.previous };
  }

  @FieldResolver(() => ApiKeyKindEnum, { description: 'What the key acts as.' })
  kind(@Root() key: ApiKey): ApiKeyKind {
    return apiKeyKindOf(key);
  }

  @FieldResolver(() => ApiKeyStatusEnum, { description: 'ACTIVE, EXPIRED or REVOKED, now.' })
  status(@Root() key: ApiKey): ApiKeyStatus {
    return apiKeyStatusOf(key);
  }

  @FieldResolver(() => String, { nullable: true, description: 'The last 4 characters of the key; null for keys issued before they were kept.' })
  truncatedToken(@Root() key: ApiKey): string | null {
    return key.tokenTail;
  }

  @FieldResolver(() => UserType, { nullable: true, description: 'For a USER key, the user it acts as (null for account keys, and once the user is deleted).' })
  user(@Root() key: ApiKey, @Ctx() context: Context): Promise<UserRow | null> | null {
    return key.userId ? usersLoader(context).load(key.userId) : null;
  }

  @FieldResolver(() => UserType, { nullable: true, description: 'The user whose credential created the key; null when an account key or the operator CLI did (or the user is deleted).' })
  createdBy(@Root() key: ApiKey, @Ctx() context: Context): Promise<UserRow | null> | null {
    return key.createdByUserId ? usersLoader(context).load(key.createdByUserId) : null;
  }
}

/** `User.apiKeys`: nullable, so a caller who may not see them loses that field only. */
@Resolver(() => UserType)
export class UserApiKeysResolver {
  @FieldResolver(() => ApiKeyConnection, {
    nullable: true,
    description: 'The user\'s API keys, newest first. The user themself or account_admin (FORBIDDEN otherwise).',
  })
  apiKeys(@Root() user: { id: string }, @Args(() => ApiKeyPageArgs) args: ApiKeyPageArgs, @Ctx() context: Context) {
    policy.assertMayReadApiKeysOf(requirePrincipal(context), user.id);
    const request = pageRequest(args, user.id, context);
    return connection(apiKeysService(context).pageFor(request), request, context);
  }
}
