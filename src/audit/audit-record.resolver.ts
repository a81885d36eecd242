import { Arg, Args, Ctx, FieldResolver, ID, Query, Resolver, Root } from 'type-graphql';
import { checkPageArgs } from '../graphql/connection.js';
import { requirePrincipal, type Context } from '../graphql/context.js';
import { UserType, type UserSource } from '../users/user.type.js';
import { AuditPageArgs, AuditRecordFilterInput, UserAuditPageArgs } from './audit-record.inputs.js';
import { AuditRecordConnection, AuditRecordType } from './audit-record.type.js';
import { auditCursor, placeOf } from './audit-cursors.js';
import { AuditRecordsService, MAX_AUDIT_PAGE_SIZE, type AuditPage, type AuditPageRequest } from './audit-records.service.js';

function auditRecordsService(context: Context): AuditRecordsService {
  return new AuditRecordsService(context.em, requirePrincipal(context), context.runtime.urls);
}

/** Newest first, keyset-paged in chain order; a cursor holds the last record's time and position, signed. */
function pageRequest(args: AuditPageArgs, context: Context, scope: unknown): AuditPageRequest {
  checkPageArgs(args, MAX_AUDIT_PAGE_SIZE);
  if (!args.after) return { first: args.first };
  return { first: args.first, after: placeOf(args.after, context, scope) };
}

/** A cursor continues only the list it came from: the same filter (as given) or the same user and window. */
function connection(page: AuditPage, request: AuditPageRequest, context: Context, scope: unknown) {
  return AuditRecordConnection.from({
    ...page,
    hasPreviousPage: request.after !== undefined,
    cursorOf: (record) => auditCursor(context, record, scope),
  });
}

@Resolver(() => AuditRecordType)
export class AuditRecordResolver {
  @Query(() => AuditRecordConnection, {
    nullable: true,
    description: 'The account\'s audit records, newest first (default: the last 24 hours). Owners, admins and full-access account keys. Nullable: forbidden, it is null with its error and the rest of the page is served.',
  })
  async auditRecords(
    @Arg('filter', () => AuditRecordFilterInput, { nullable: true, description: 'Which records (default: the last 24 hours, all of them).' }) filter: AuditRecordFilterInput | null | undefined,
    @Args(() => AuditPageArgs) args: AuditPageArgs,
    @Ctx() context: Context,
  ) {
    const scope = { filter };
    const request = pageRequest(args, context, scope);
    return connection(await auditRecordsService(context).list(filter ?? {}, request), request, context, scope);
  }
}

/** `User.auditRecords`: the users feature's type, extended here. */
@Resolver(() => UserType)
export class UserAuditRecordsResolver {
  @FieldResolver(() => AuditRecordConnection, {
    // Its rights differ from the user's: a FORBIDDEN here nulls this field, not the whole user.
    nullable: true,
    description: 'Records of changes made to this user (not by them), newest first. The user themself or can_update_user (FORBIDDEN and null otherwise).',
  })
  async auditRecords(@Root() user: UserSource, @Args(() => UserAuditPageArgs) args: UserAuditPageArgs, @Ctx() context: Context) {
    const scope = { userId: user.id, since: args.since, until: args.until };
    const request = pageRequest(args, context, scope);
    return connection(await auditRecordsService(context).listForUser(user.id, args, request), request, context, scope);
  }
}

/** `Query.userAuditRecords` is what `GET /users/{id}/audit/records` executes: a user id that may be unknown (404), not a loaded user. */
@Resolver()
export class UserAuditRecordsQueryResolver {
  @Query(() => AuditRecordConnection, { description: 'Records of changes made to a user, newest first. The user themself or can_update_user; NOT_FOUND for unknown users.' })
  async userAuditRecords(@Arg('userId', () => ID, { description: 'The user whose records to list.' }) userId: string, @Args(() => UserAuditPageArgs) args: UserAuditPageArgs, @Ctx() context: Context) {
    const scope = { userId, since: args.since, until: args.until };
    const request = pageRequest(args, context, scope);
    return connection(await auditRecordsService(context).listForUser(userId, args, request), request, context, scope);
  }
}
