import { Field, ID, InputType } from 'type-graphql';
import type { SubscribableType } from './subscribable.entity.js';
import { NotificationSubscribableTypeEnum } from './notification-subscription.type.js';

@InputType({ description: 'An entity to subscribe to or unsubscribe from, named by its type and public id.' })
export class NotificationSubscribableInput {
  @Field(() => NotificationSubscribableTypeEnum)
  subscribableType!: SubscribableType;

  @Field({ description: 'The entity\'s public id (e.g. "PD1234"); at most 255 characters.' })
  subscribableId!: string;
}

@InputType({ description: 'Subscribes a user to 1 to 100 distinct entities, in one transaction.' })
export class CreateNotificationSubscriptionsInput {
  @Field(() => ID)
  userId!: string;

  @Field(() => [NotificationSubscribableInput], { description: '1 to 100 entities, none twice.' })
  subscribables!: NotificationSubscribableInput[];
}

@InputType({ description: 'Unsubscribes a user from 1 to 100 distinct entities, in one transaction.' })
export class RemoveNotificationSubscriptionsInput {
  @Field(() => ID)
  userId!: string;

  @Field(() => [NotificationSubscribableInput], { description: '1 to 100 entities, none twice.' })
  subscribables!: NotificationSubscribableInput[];
}
