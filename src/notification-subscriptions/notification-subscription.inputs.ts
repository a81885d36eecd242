import { Field, ID, InputType } from 'type-graphql';
import { MaxLength } from '../graphql/input-bounds.js';
import { MAX_SUBSCRIBABLE_FIELD_LENGTH, type SubscribableType } from './subscribable.entity.js';
import { NotificationSubscribableTypeEnum } from './notification-subscription.type.js';

@InputType({ description: 'An entity to subscribe to or unsubscribe from, named by its type and public id.' })
export class NotificationSubscribableInput {
  @Field(() => NotificationSubscribableTypeEnum, { description: 'The entity\'s kind.' })
  subscribableType!: SubscribableType;

  @MaxLength(MAX_SUBSCRIBABLE_FIELD_LENGTH)
  @Field({ description: `The entity's public id (e.g. "PD1234"); at most ${MAX_SUBSCRIBABLE_FIELD_LENGTH} characters.` })
  subscribableId!: string;
}

@InputType({ description: 'Subscribes a user to 1 to 100 distinct entities, in one transaction.' })
export class CreateNotificationSubscriptionsInput {
  @Field(() => ID, { description: 'The user to subscribe.' })
  userId!: string;

  @Field(() => [NotificationSubscribableInput], { description: '1 to 100 entities, none twice.' })
  subscribables!: NotificationSubscribableInput[];
}

@InputType({ description: 'Unsubscribes a user from 1 to 100 distinct entities, in one transaction.' })
export class RemoveNotificationSubscriptionsInput {
  @Field(() => ID, { description: 'The user to unsubscribe.' })
  userId!: string;

  @Field(() => [NotificationSubscribableInput], { description: '1 to 100 entities, none twice.' })
  subscribables!: NotificationSubscribableInput[];
}
