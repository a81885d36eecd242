import type { Feature } from '../app/feature.js';
import { NotificationSubscription } from './notification-subscription.entity.js';
import {
  NotificationSubscriptionFieldsResolver,
  NotificationSubscriptionsResolver,
  UserNotificationSubscriptionsResolver,
} from './notification-subscription.resolver.js';
import { notificationSubscriptionRoutes, notificationSubscriptionSchemas } from './notification-subscription.rest.js';
import { removeSubscriptionsOfUser } from './notification-subscriptions.service.js';
import { Subscribable } from './subscribable.entity.js';
import { SubscribablesResolver } from './subscribables.resolver.js';

export const notificationSubscriptionsFeature: Feature = {
  name: 'notification-subscriptions',
  entities: [Subscribable, NotificationSubscription],
  resolvers: [NotificationSubscriptionsResolver, UserNotificationSubscriptionsResolver, NotificationSubscriptionFieldsResolver, SubscribablesResolver],
  routes: notificationSubscriptionRoutes,
  schemas: notificationSubscriptionSchemas,
  onUserDeleted: (em, user) => removeSubscriptionsOfUser(em, user.id),
};
