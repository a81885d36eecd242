import DataLoader from 'dataloader';
import { Arg, Args, ArgsType, Ctx, Field, FieldResolver, ID, Int, Mutation, Query, Resolver, Root } from 'type-graphql';
import { InvalidInputError } from '../errors/domain-errors.js';
import { checkPageArgs } from '../graphql/connection.js';
import { CURSOR_MAX_LENGTH } from '../graphql/cursor.js';
import { MaxLength } from '../graphql/input-bounds.js';
import { requirePrincipal, type Context } from '../graphql/context.js';
import { UserType, type UserSource } from '../users/user.type.js';
import { CreateNotificationSubscriptionsInput, RemoveNotificationSubscriptionsInput } from './notification-subscription.inputs.js';
import {
  CreateNotificationSubscriptionsPayload,
  NotificationSubscribableTypeEnum,
  NotificationSubscriberTypeEnum,
  NotificationSubscriptionConnection,
  NotificationSubscriptionType,
  RemoveNotificationSubscriptionsPayload,
} from './notification-subscription.type.js';
import { MAX_SUBSCRIPTIONS_PAGE_SIZE, NotificationSubscriptionsService, subscriptionId, type SubscriptionRow, type SubscriptionSlice } from './notification-subscriptions.service.js';
import type { SubscribableType } from './subscribable.entity.js';

const SUBSCRIPTIONS_CURSOR = 'notification-subscriptions';

@ArgsType()
class NotificationSubscriptionsPageArgs {
  @Field(() => Int, { defaultValue: 25, description: `Page size, 1 to ${MAX_SUBSCRIPTIONS_PAGE_SIZE}.` })
  first!: number;

  @MaxLength(CURSOR_MAX_LENGTH)
  @Field(() => String, { nullable: true, description: 'An `endCursor` from a previous page of the same user\'s subscriptions.' })
  after?: string | null;

  @Field(() => Int, { nullable: true, description: 'Skip this many subscriptions instead of using `after` (classic offset paging); first + offset at most 10000.' })
  offset?: number | null;
}

@ArgsType()
class UserNotificationSubscriptionsArgs extends NotificationSubscriptionsPageArgs {
  @Field(() => ID, { description: 'The user whose subscriptions to list.' })
  userId!: string;
}

export function notificationSubscriptionsService(context: Context): NotificationSubscriptionsService {
  return new NotificationSubscriptionsService(context.em, requirePrincipal(context), context.transactions);
}

/**
 * Per request, batched across every user on the page: one grouped statement for the slices of one
 * page shape (first/offset) and one grouped count, each only if some client field needs it.
 */
function slicesLoader(context: Context, service: NotificationSubscriptionsService, page: { first: number; offset: number }) {
  return context.loaders.get(`notification-subscription-slices:${page.first}:${page.offset}`, () =>
    new DataLoader<string, SubscriptionSlice>(async (userIds) => {
      const found = await service.slicesFor(userIds, page);
      return userIds.map((id) => found.get(id)!);
    }),
  );
}

function countsLoader(context: Context, service: NotificationSubscriptionsService) {
  return context.loaders.get('notification-subscription-counts', () =>
    new DataLoader<string, number>(async (userIds) => {
      const found = await service.countsFor(userIds);
      return userIds.map((id) => found.get(id) ?? 0);
    }),
  );
}

/**
 * Checks the page arguments and answers one user's subscriptions as a connection whose rows and
 * count load only if selected. Callers have checked access to the user.
 */
function subscriptionsConnection(context: Context, service: NotificationSubscriptionsService, userId: string, args: NotificationSubscriptionsPageArgs) {
  const offset = checkPageArgs(args, MAX_SUBSCRIPTIONS_PAGE_SIZE);
  let afterId: string | undefined;
  if (args.after) {
    const cursor = context.runtime.cursors.decode<{ u?: unknown; i?: unknown }>(SUBSCRIPTIONS_CURSOR, args.after, 'after');
    // A cursor names a position in one user's list; another user's is refused like a forged one.
    if (cursor.u !== userId || typeof cursor.i !== 'string' || !/^\d{1,19}$/.test(cursor.i)) {
      throw new InvalidInputError('after is not a valid cursor for this list');
    }
    afterId = cursor.i;
  }
  const first = args.first;
  return NotificationSubscriptionConnection.deferred({
    // A cursor names one user's list, so only first/offset pages are batched across users.
    slice: () => (afterId ? service.sliceAfter(userId, { first, afterId }) : slicesLoader(context, service, { first, offset }).load(userId)),
    hasPreviousPage: Boolean(afterId) || offset > 0,
    cursorOf: (subscription) => context.runtime.cursors.encode(SUBSCRIPTIONS_CURSOR, { u: userId, i: subscription.id }),
    countTotal: () => countsLoader(context, service).load(userId),
  });
}

/** Root operations: the list (for callers holding only `subscribers.read`) and the two mutations. */
@Resolver()
export class NotificationSubscriptionsResolver {
  @Query(() => NotificationSubscriptionConnection, {
    description: 'A user\'s notification subscriptions, in subscription order (the same list as `User.notificationSubscriptions`, '
      + 'reachable with the `subscribers.read` scope alone). The user themself or can_update_user; NOT_FOUND for unknown users.',
  })
  async notificationSubscriptions(@Args(() => UserNotificationSubscriptionsArgs) args: UserNotificationSubscriptionsArgs, @Ctx() context: Context) {
    const service = notificationSubscriptionsService(context);
    await service.assertMayList(args.userId);
    return subscriptionsConnection(context, service, args.userId, args);
  }

  @Mutation(() => CreateNotificationSubscriptionsPayload, {
    description: 'Subscribes a user to 1 to 100 distinct entities in one transaction; each gets SUCCESS, DUPLICATE or UNAUTHORIZED. '
      + 'The user themself or can_update_user.',
  })
  async createNotificationSubscriptions(
    @Arg('input', () => CreateNotificationSubscriptionsInput, { description: 'What to change: see the input type.' }) input: CreateNotificationSubscriptionsInput,
    @Ctx() context: Context,
  ): Promise<CreateNotificationSubscriptionsPayload> {
    const { attempts, created } = await notificationSubscriptionsService(context).subscribe(input.userId, input.subscribables);
    return { subscriptions: attempts, createdSubscriptions: created };
  }

  @Mutation(() => RemoveNotificationSubscriptionsPayload, {
    description: 'Unsubscribes a user from 1 to 100 distinct entities in one transaction and counts the outcomes. The user themself or can_update_user.',
  })
  async removeNotificationSubscriptions(
    @Arg('input', () => RemoveNotificationSubscriptionsInput, { description: 'What to change: see the input type.' }) input: RemoveNotificationSubscriptionsInput,
    @Ctx() context: Context,
  ): Promise<RemoveNotificationSubscriptionsPayload> {
    const { removed, ...counts } = await notificationSubscriptionsService(context).unsubscribe(input.userId, input.subscribables);
    return { ...counts, removedSubscriptions: removed };
  }
}

/** `User.notificationSubscriptions`: the users feature's type, extended here. */
@Resolver(() => UserType)
export class UserNotificationSubscriptionsResolver {
  @FieldResolver(() => NotificationSubscriptionConnection, {
    // Its rights differ from the user's: a FORBIDDEN here nulls this field, not the whole user.
    nullable: true,
    description: 'The entities this user is subscribed to, in subscription order. The user themself or can_update_user (FORBIDDEN and null otherwise).',
  })
  notificationSubscriptions(@Root() user: UserSource, @Args(() => NotificationSubscriptionsPageArgs) args: NotificationSubscriptionsPageArgs, @Ctx() context: Context) {
    const service = notificationSubscriptionsService(context);
    service.assertMayRead(user.id);
    return subscriptionsConnection(context, service, user.id, args);
  }
}

/** The node's fields, from the plain rows the reads return (the entity comes joined: no statement here). */
@Resolver(() => NotificationSubscriptionType)
export class NotificationSubscriptionFieldsResolver {
  @FieldResolver(() => ID, { description: 'Stable for the subscription\'s key (user, entity type and entity id): the same after it is removed and created again.' })
  id(@Root() subscription: SubscriptionRow): string {
    return subscriptionId(subscription);
  }

  @FieldResolver(() => ID, { description: 'The subscribed user\'s id.' })
  subscriberId(@Root() subscription: SubscriptionRow): string {
    return subscription.userId;
  }

  @FieldResolver(() => NotificationSubscriberTypeEnum, { description: 'Always USER.' })
  subscriberType(): 'user' {
    return 'user';
  }

  @FieldResolver(() => String, { description: 'The public id of the entity.' })
  subscribableId(@Root() subscription: SubscriptionRow): string {
    return subscription.subscribableId;
  }

  @FieldResolver(() => NotificationSubscribableTypeEnum, { description: 'The entity\'s kind.' })
  subscribableType(@Root() subscription: SubscriptionRow): SubscribableType {
    return subscription.subscribableType;
  }

  @FieldResolver(() => String, { nullable: true, description: 'The entity\'s name from the registry.' })
  subscribableName(@Root() subscription: SubscriptionRow): string | null {
    return subscription.subscribableName ?? null;
  }

  @FieldResolver(() => ID, { description: 'The subscriber\'s account.' })
  accountId(@Root() subscription: SubscriptionRow): string {
    return subscription.accountId;
  }
}
