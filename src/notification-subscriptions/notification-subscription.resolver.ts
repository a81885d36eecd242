import DataLoader from 'dataloader';
import { Arg, Args, ArgsType, Authorized, Ctx, Field, FieldResolver, ID, Int, Mutation, Query, Resolver, Root } from 'type-graphql';
import type { Requirement } from '../auth/auth-checker.js';
import { InvalidInputError } from '../errors/domain-errors.js';
import { checkPageArgs } from '../graphql/connection.js';
import { CURSOR_MAX_LENGTH } from '../graphql/cursor.js';
import { MaxLength } from '../graphql/input-bounds.js';
import { requirePrincipal, type Context } from '../graphql/context.js';
import type { User } from '../users/user.entity.js';
import { UserType } from '../users/user.type.js';
import { NotificationSubscription } from './notification-subscription.entity.js';
import { CreateNotificationSubscriptionsInput, RemoveNotificationSubscriptionsInput } from './notification-subscription.inputs.js';
import {
  CreateNotificationSubscriptionsPayload,
  NotificationSubscribableTypeEnum,
  NotificationSubscriberTypeEnum,
  NotificationSubscriptionConnection,
  NotificationSubscriptionType,
  RemoveNotificationSubscriptionsPayload,
} from './notification-subscription.type.js';
import { MAX_SUBSCRIPTIONS_PAGE_SIZE, NotificationSubscriptionsService, type SubscriptionPage } from './notification-subscriptions.service.js';
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
  @Field(() => ID)
  userId!: string;
}

export function notificationSubscriptionsService(context: Context): NotificationSubscriptionsService {
  return new NotificationSubscriptionsService(context.em, requirePrincipal(context), context.transactions);
}

/** Checks the page arguments and serves one page of a user's subscriptions as a connection. */
async function subscriptionsConnection(
  context: Context,
  userId: string,
  args: NotificationSubscriptionsPageArgs,
  load: (options: { first: number; offset: number; afterId?: string }) => Promise<SubscriptionPage>,
) {
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
  const page = await load({ first: args.first, offset, afterId });
  return NotificationSubscriptionConnection.from({
    ...page,
    hasPreviousPage: Boolean(afterId) || offset > 0,
    cursorOf: (subscription) => context.runtime.cursors.encode(SUBSCRIPTIONS_CURSOR, { u: userId, i: subscription.id }),
  });
}

/** Root operations: the list (for callers holding only `subscribers.read`) and the two mutations. */
@Resolver()
export class NotificationSubscriptionsResolver {
  @Authorized<Requirement>('subscribers.read')
  @Query(() => NotificationSubscriptionConnection, {
    description: 'A user\'s notification subscriptions, in subscription order (the same list as `User.notificationSubscriptions`, '
      + 'reachable with the `subscribers.read` scope alone). The user themself or can_update_user; NOT_FOUND for unknown users.',
  })
  notificationSubscriptions(@Args(() => UserNotificationSubscriptionsArgs) args: UserNotificationSubscriptionsArgs, @Ctx() context: Context) {
    return subscriptionsConnection(context, args.userId, args, (options) => notificationSubscriptionsService(context).list(args.userId, options));
  }

  @Authorized<Requirement>('subscribers.write', 'write')
  @Mutation(() => CreateNotificationSubscriptionsPayload, {
    description: 'Subscribes a user to 1 to 100 distinct entities in one transaction; each gets SUCCESS, DUPLICATE or UNAUTHORIZED. '
      + 'The user themself or can_update_user.',
  })
  async createNotificationSubscriptions(
    @Arg('input', () => CreateNotificationSubscriptionsInput) input: CreateNotificationSubscriptionsInput,
    @Ctx() context: Context,
  ): Promise<CreateNotificationSubscriptionsPayload> {
    return { subscriptions: await notificationSubscriptionsService(context).subscribe(input.userId, input.subscribables) };
  }

  @Authorized<Requirement>('subscribers.write', 'write')
  @Mutation(() => RemoveNotificationSubscriptionsPayload, {
    description: 'Unsubscribes a user from 1 to 100 distinct entities in one transaction and counts the outcomes. The user themself or can_update_user.',
  })
  async removeNotificationSubscriptions(
    @Arg('input', () => RemoveNotificationSubscriptionsInput) input: RemoveNotificationSubscriptionsInput,
    @Ctx() context: Context,
  ): Promise<RemoveNotificationSubscriptionsPayload> {
    return notificationSubscriptionsService(context).unsubscribe(input.userId, input.subscribables);
  }
}

/** `User.notificationSubscriptions`: the users feature's type, extended here. */
@Resolver(() => UserType)
export class UserNotificationSubscriptionsResolver {
  @Authorized<Requirement>('subscribers.read')
  @FieldResolver(() => NotificationSubscriptionConnection, {
    description: 'The entities this user is subscribed to, in subscription order. The user themself or can_update_user (FORBIDDEN otherwise).',
  })
  notificationSubscriptions(@Root() user: User, @Args(() => NotificationSubscriptionsPageArgs) args: NotificationSubscriptionsPageArgs, @Ctx() context: Context) {
    return subscriptionsConnection(context, user.id, args, async (options) => {
      const service = notificationSubscriptionsService(context);
      // A cursor names one user's list, so only first/offset pages are batched across users.
      if (options.afterId) return service.listFor(user, options);
      service.assertMayRead(user.id);
      const counts = context.loaders.get('notification-subscription-counts', () =>
        new DataLoader<string, number>(async (userIds) => {
          const found = await service.countsFor(userIds);
          return userIds.map((id) => found.get(id) ?? 0);
        }),
      );
      const pages = context.loaders.get(`notification-subscription-pages:${options.first}:${options.offset}`, () =>
        new DataLoader<string, SubscriptionPage>(async (userIds) => {
          const found = await service.pagesFor(userIds, { first: options.first, offset: options.offset }, (userId) => counts.load(userId));
          return userIds.map((id) => found.get(id)!);
        }),
      );
      return pages.load(user.id);
    });
  }
}

/**
 * The node's fields. Every list query loads the subscribed entity with the subscription (one SQL
 * join, see NotificationSubscriptionsService.listFor), so none of these queries the database.
 */
@Resolver(() => NotificationSubscriptionType)
export class NotificationSubscriptionFieldsResolver {
  @FieldResolver(() => ID, { description: 'The subscribed user\'s id.' })
  subscriberId(@Root() subscription: NotificationSubscription): string {
    return subscription.userId;
  }

  @FieldResolver(() => NotificationSubscriberTypeEnum)
  subscriberType(): 'user' {
    return 'user';
  }

  @FieldResolver(() => String, { description: 'The public id of the entity.' })
  subscribableId(@Root() subscription: NotificationSubscription): string {
    return subscription.subscribable.publicId;
  }

  @FieldResolver(() => NotificationSubscribableTypeEnum)
  subscribableType(@Root() subscription: NotificationSubscription): SubscribableType {
    return subscription.subscribable.type;
  }

  @FieldResolver(() => String, { nullable: true, description: 'The entity\'s name from the registry.' })
  subscribableName(@Root() subscription: NotificationSubscription): string | null {
    return subscription.subscribable.name ?? null;
  }

  @FieldResolver(() => ID, { description: 'The subscriber\'s account.' })
  accountId(@Root() subscription: NotificationSubscription): string {
    return subscription.account.id;
  }
}
