import DataLoader from 'dataloader';
import { Arg, Args, ArgsType, Ctx, Field, FieldResolver, ID, Int, Mutation, Query, Resolver, Root } from 'type-graphql';
import { DateTimeResolver } from 'graphql-scalars';
import { URLScalar } from '../graphql/scalars.js';
import { InvalidInputError } from '../errors/domain-errors.js';
import { checkPageArgs } from '../graphql/connection.js';
import { CURSOR_MAX_LENGTH } from '../graphql/cursor.js';
import { MaxLength } from '../graphql/input-bounds.js';
import { requirePrincipal, type Context } from '../graphql/context.js';
import type { User } from '../users/user.entity.js';
import { UsersService } from '../users/user.service.js';
import { UserType } from '../users/user.type.js';
import type { DelegationStatus, DelegationType, OAuthDelegation } from './oauth-delegation.entity.js';
import { DeleteOAuthDelegationsInput, DeleteOAuthDelegationsPayload, RevokeOAuthDelegationInput, RevokeOAuthDelegationPayload } from './oauth-delegation.inputs.js';
import { MAX_DELEGATION_PAGE_SIZE, type DelegationPage, type DelegationPageRequest, type DelegationPosition } from './oauth-delegation.pages.js';
import { OAuthDelegationsService, isUuid } from './oauth-delegation.service.js';
import {
  OAuthDelegationConnection,
  OAuthDelegationObject,
  OAuthDelegationRevocationRequestsStatus,
  OAuthDelegationStatusEnum,
  OAuthDelegationTypeEnum,
} from './oauth-delegation.type.js';

const DELEGATIONS_CURSOR = 'oauth-delegations';

export const REVOCATION_STATUS_DEPRECATION =
  'Revocation is synchronous: deleteOAuthDelegations (REST: DELETE /oauth_delegations) revokes before it answers, so nothing is ever pending.';

@ArgsType()
class DelegationPageArgs {
  @Field(() => [OAuthDelegationTypeEnum], { nullable: true, description: 'Only these types (default: all).' })
  types?: DelegationType[] | null;

  @Field(() => [OAuthDelegationStatusEnum], { nullable: true, description: 'Only these statuses (default: all).' })
  statuses?: DelegationStatus[] | null;

  @Field(() => Int, { defaultValue: 25, description: `Page size, 1 to ${MAX_DELEGATION_PAGE_SIZE}.` })
  first!: number;

  @MaxLength(CURSOR_MAX_LENGTH)
  @Field(() => String, { nullable: true, description: 'An `endCursor` from a previous page.' })
  after?: string | null;
}

@ArgsType()
class UserDelegationPageArgs extends DelegationPageArgs {
  @Field(() => ID, { description: 'The user whose delegations to list.' })
  userId!: string;
}

export function oauthDelegationsService(context: Context): OAuthDelegationsService {
  return new OAuthDelegationsService(context.em, requirePrincipal(context), context.transactions);
}

/** Newest first, keyset-paged: a cursor holds the last row's (created_at, id), signed. */
function pageRequest(args: DelegationPageArgs, context: Context): DelegationPageRequest {
  checkPageArgs(args, MAX_DELEGATION_PAGE_SIZE);
  let after: DelegationPosition | undefined;
  if (args.after) {
    const position = context.runtime.cursors.decode<{ c?: unknown; i?: unknown }>(DELEGATIONS_CURSOR, args.after, 'cursor', delegationsScope(args));
    const createdAt = typeof position.c === 'string' ? new Date(position.c) : undefined;
    if (!createdAt || Number.isNaN(createdAt.getTime()) || typeof position.i !== 'string' || !isUuid(position.i)) {
      throw new InvalidInputError('cursor is not a valid cursor for this list');
    }
    after = { createdAt, id: position.i };
  }
  return { types: args.types, statuses: args.statuses, first: args.first, after };
}

/** The arguments that choose which delegations are listed: a cursor continues only the list it came from. */
function delegationsScope(request: { types?: readonly string[] | null; statuses?: readonly string[] | null }) {
  return { types: request.types, statuses: request.statuses };
}

function connection(page: DelegationPage, request: DelegationPageRequest, context: Context) {
  const scope = delegationsScope(request);
  return OAuthDelegationConnection.from({
    ...page,
    hasPreviousPage: request.after !== undefined,
    cursorOf: (delegation) => context.runtime.cursors.encode(DELEGATIONS_CURSOR, { c: delegation.createdAt.toISOString(), i: delegation.id }, scope),
  });
}

@Resolver(() => OAuthDelegationObject)
export class OAuthDelegationResolver {
  @Query(() => OAuthDelegationConnection, { description: 'A user\'s delegations, newest first. The user themself or can_update_user.' })
  async oauthDelegations(@Args(() => UserDelegationPageArgs) args: UserDelegationPageArgs, @Ctx() context: Context) {
    const request = pageRequest(args, context);
    const page = await oauthDelegationsService(context).listForUser(args.userId, request);
    return connection(page, request, context);
  }

  @Query(() => OAuthDelegationObject, {
    description: 'One delegation; with `userId`, it must be that user\'s (else NOT_FOUND). The user themself or can_update_user.',
  })
  oauthDelegation(
    @Arg('id', () => ID, { description: 'The delegation\'s id.' }) id: string,
    @Arg('userId', () => ID, { nullable: true, description: 'The user it must belong to.' }) userId: string | null | undefined,
    @Ctx() context: Context,
  ): Promise<OAuthDelegation> {
    return oauthDelegationsService(context).get(id, userId ?? undefined);
  }

  @Query(() => OAuthDelegationRevocationRequestsStatus, {
    deprecationReason: REVOCATION_STATUS_DEPRECATION,
    description: 'Pending OAuth delegation revocation requests of the account: always none. Owners, admins and account API keys.',
  })
  oauthDelegationRevocationRequestsStatus(
    @Arg('requestedAtEnd', () => DateTimeResolver, { nullable: true, description: 'The end of the range searched; default now.' }) requestedAtEnd: Date | null | undefined,
  ): OAuthDelegationRevocationRequestsStatus {
    return { pendingCount: 0, requestedAtEnd: requestedAtEnd ?? new Date() };
  }

  @Mutation(() => DeleteOAuthDelegationsPayload, {
    description: 'Signs a user out of the mobile and/or web app: revokes their ISSUED delegations of those types before answering; '
      + 'their tokens are refused from the next request on. The user themself or can_update_user.',
  })
  async deleteOAuthDelegations(
    @Arg('input', () => DeleteOAuthDelegationsInput, { description: 'What to change: see the input type.' }) input: DeleteOAuthDelegationsInput,
    @Ctx() context: Context,
  ): Promise<DeleteOAuthDelegationsPayload> {
    const revoked = await oauthDelegationsService(context).revoke(input.userId, input.types);
    const user = await new UsersService(context.em, requirePrincipal(context), context.transactions).get(input.userId);
    return { revokedCount: revoked.length, revokedOAuthDelegations: revoked, user };
  }

  // No `write` requirement: revoking lowers access, so a read-only user may still end a grant they gave.
  @Mutation(() => RevokeOAuthDelegationPayload, {
    description: 'Revokes one of a user\'s delegations, whatever its type (third-party apps\' grants are INTEGRATION delegations with a user), '
      + 'before answering: its access and refresh tokens are refused from the next request on. The user themself or can_update_user. '
      + 'Without userId, an integration app\'s account-wide delegation (OAuthApp.delegation) may be revoked too: account_admin, and a token needs credentials.write.',
  })
  async revokeOAuthDelegation(
    @Arg('input', () => RevokeOAuthDelegationInput, { description: 'What to change: see the input type.' }) input: RevokeOAuthDelegationInput,
    @Ctx() context: Context,
  ): Promise<RevokeOAuthDelegationPayload> {
    return { oauthDelegation: await oauthDelegationsService(context).revokeOne(input.userId ?? undefined, input.id) };
  }

  @FieldResolver(() => URLScalar, { nullable: true, description: 'The delegation\'s REST API URL; null for an integration app\'s account-wide delegation, which has no REST path.' })
  self(@Root() delegation: OAuthDelegation, @Ctx() context: Context): string | null {
    return delegation.userId === null ? null : `${context.runtime.urls.api}/users/${delegation.userId}/oauth_delegations/${delegation.id}`;
  }

  @FieldResolver(() => URLScalar, { nullable: true, description: 'Where the delegation is shown in the web app; null for an integration app\'s account-wide delegation.' })
  htmlUrl(@Root() delegation: OAuthDelegation, @Ctx() context: Context): string | null {
    return delegation.userId === null ? null : `${context.runtime.urls.web}/users/${delegation.userId}/oauth_delegations/${delegation.id}`;
  }

  @FieldResolver(() => [String], { description: 'The granted OAuth scopes.' })
  scopes(@Root() delegation: OAuthDelegation): string[] {
    return delegation.scope.split(/\s+/).filter(Boolean);
  }
}

/** `User.oauthDelegations`: batched across the users of one response (one query per distinct argument set). */
@Resolver(() => UserType)
export class UserOAuthDelegationsResolver {
  @FieldResolver(() => OAuthDelegationConnection, {
    nullable: true,
    description: 'The user\'s OAuth delegations, newest first. The user themself or can_update_user (FORBIDDEN otherwise).',
  })
  async oauthDelegations(@Root() user: User, @Args(() => DelegationPageArgs) args: DelegationPageArgs, @Ctx() context: Context) {
    const service = oauthDelegationsService(context);
    service.assertMayManage(user.id);
    const request = pageRequest(args, context);
    const key = JSON.stringify({ types: args.types ?? null, statuses: args.statuses ?? null, first: args.first, after: args.after ?? null });
    const loader = context.loaders.get(`oauth-delegations:${key}`, () =>
      new DataLoader<string, DelegationPage>(async (userIds) => {
        const pages = await service.pagesForUsers(userIds, request);
        return userIds.map((id) => pages.get(id)!);
      }),
    );
    return connection(await loader.load(user.id), request, context);
  }
}
