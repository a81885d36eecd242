import { Field, ID, Int, ObjectType, registerEnumType } from 'type-graphql';
import { DateTimeResolver } from 'graphql-scalars';
import { connectionType } from '../graphql/connection.js';
import type { NotificationSubscription } from './notification-subscription.entity.js';
import type { SubscribableType } from './subscribable.entity.js';
import type { SubscriptionResult, SubscriptionRow } from './notification-subscriptions.service.js';

export const NotificationSubscribableTypeEnum = {
  INCIDENT: 'incident',
  BUSINESS_SERVICE: 'business_service',
} as const satisfies Record<string, SubscribableType>;

registerEnumType(NotificationSubscribableTypeEnum, {
  name: 'NotificationSubscribableType',
  valuesConfig: {
    INCIDENT: { description: 'An incident.' },
    BUSINESS_SERVICE: { description: 'A business service.' },
  },
  description: 'The kind of entity a user may subscribe to.',
});

export const NotificationSubscriberTypeEnum = { USER: 'user' } as const;

registerEnumType(NotificationSubscriberTypeEnum, {
  name: 'NotificationSubscriberType',
  valuesConfig: {
    USER: { description: 'A user.' },
  },
  description: 'The kind of subscriber; users are the only subscribers for now.',
});

export const NotificationSubscriptionResultEnum = {
  SUCCESS: 'success',
  DUPLICATE: 'duplicate',
  UNAUTHORIZED: 'unauthorized',
} as const satisfies Record<string, SubscriptionResult>;

registerEnumType(NotificationSubscriptionResultEnum, {
  name: 'NotificationSubscriptionResult',
  description: 'What a subscribe call did for one entity.',
  valuesConfig: {
    SUCCESS: { description: 'The subscription was created.' },
    DUPLICATE: { description: 'The user was already subscribed; nothing changed.' },
    UNAUTHORIZED: { description: 'The entity is not one of the caller\'s account (unknown to its registry); nothing changed.' },
  },
});

/**
 * A user's subscription to an incident or business service. Resolvers return the
 * `NotificationSubscription` entity; the entity-derived fields are field resolvers.
 */
@ObjectType('NotificationSubscription', { description: 'A subscriber (a user) following an incident or a business service of the same account.' })
export class NotificationSubscriptionType implements Partial<Record<keyof NotificationSubscription, unknown>> {
  @Field(() => DateTimeResolver, { description: 'When the subscription was created.' })
  createdAt!: Date;
}

export const NotificationSubscriptionConnection = connectionType<SubscriptionRow>('NotificationSubscription', () => NotificationSubscriptionType);

@ObjectType({ description: 'The outcome of subscribing one user to one entity.' })
export class NotificationSubscriptionAttempt {
  @Field(() => ID, { description: 'The user\'s id.' })
  subscriberId!: string;

  @Field(() => NotificationSubscriberTypeEnum, { description: 'Always USER.' })
  subscriberType!: 'user';

  @Field({ description: 'The public id of the entity, as given.' })
  subscribableId!: string;

  @Field(() => NotificationSubscribableTypeEnum, { description: 'The entity\'s kind, as given.' })
  subscribableType!: SubscribableType;

  @Field(() => ID, { description: 'The subscriber\'s account.' })
  accountId!: string;

  @Field(() => NotificationSubscriptionResultEnum, { description: 'What the call did for this entity.' })
  result!: SubscriptionResult;
}

@ObjectType({ description: 'What createNotificationSubscriptions did: an outcome per entity, and the subscriptions it created.' })
export class CreateNotificationSubscriptionsPayload {
  @Field(() => [NotificationSubscriptionAttempt], { description: 'One per requested entity, in request order.' })
  subscriptions!: NotificationSubscriptionAttempt[];

  @Field(() => [NotificationSubscriptionType], { description: 'The subscriptions this call created (SUCCESS outcomes), in subscription order.' })
  createdSubscriptions!: SubscriptionRow[];
}

@ObjectType({ description: 'What removeNotificationSubscriptions did: the subscriptions it removed, and counts of the outcomes.' })
export class RemoveNotificationSubscriptionsPayload {
  @Field(() => [NotificationSubscriptionType], { description: 'The subscriptions this call removed, as they were, in subscription order.' })
  removedSubscriptions!: SubscriptionRow[];

  @Field(() => Int, { description: 'Subscriptions removed.' })
  deletedCount!: number;

  @Field(() => Int, { description: 'Entities not in the caller\'s account.' })
  unauthorizedCount!: number;

  @Field(() => Int, { description: 'Entities of the account the user was not subscribed to.' })
  nonExistentCount!: number;
}
