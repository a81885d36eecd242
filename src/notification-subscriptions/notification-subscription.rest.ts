import { UnprocessableError } from '../errors/domain-errors.js';
import type {
  CreateNotificationSubscriptionsMutation,
  ListNotificationSubscriptionsQuery,
  RemoveNotificationSubscriptionsMutation,
} from '../graphql/generated/operations.js';
import type { RestRoute } from '../rest/route.js';
import { operationDocument } from '../rest/route.js';
import { classicPagination } from '../rest/params.js';
import { excerpt } from '../graphql/input-bounds.js';
import { SUBSCRIBABLE_TYPES, isSubscribableType } from './subscribable.entity.js';

const document = (file: string) => operationDocument(import.meta.url, file);

/**
 * The `subscribables` of a subscribe or unsubscribe body, as GraphQL input. Every payload problem
 * is 422 (SPEC section 7); the count and duplicate rules are the service's, shared with GraphQL.
 */
export function subscribablesFromBody(body: unknown): { subscribableType: string; subscribableId: string }[] {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new UnprocessableError('the request body must be a JSON object with "subscribables"');
  const list = (body as Record<string, unknown>).subscribables;
  if (list === undefined || list === null) throw new UnprocessableError('subscribables is required');
  if (!Array.isArray(list)) throw new UnprocessableError('subscribables must be an array');
  const problems: string[] = [];
  const items = list.map((element: unknown, index) => {
    const where = `subscribables[${index}]`;
    if (typeof element !== 'object' || element === null || Array.isArray(element)) {
      problems.push(`${where} must be an object with subscribable_type and subscribable_id`);
      return { subscribableType: '', subscribableId: '' };
    }
    const { subscribable_type: type, subscribable_id: id } = element as Record<string, unknown>;
    if (type === undefined || type === null) problems.push(`${where}.subscribable_type is required`);
    else if (!isSubscribableType(type)) problems.push(`${where}.subscribable_type must be one of ${SUBSCRIBABLE_TYPES.join(', ')} (got ${excerpt(type)})`);
    if (id === undefined || id === null) problems.push(`${where}.subscribable_id is required`);
    else if (typeof id !== 'string') problems.push(`${where}.subscribable_id must be a string`);
    return { subscribableType: isSubscribableType(type) ? type.toUpperCase() : '', subscribableId: typeof id === 'string' ? id : '' };
  });
  if (problems.length) throw new UnprocessableError(problems);
  return items;
}

type SubscriptionFields = Omit<ListNotificationSubscriptionsQuery['notificationSubscriptions']['nodes'][number], 'subscribableName'>;

function presentSubscription(subscription: SubscriptionFields) {
  return {
    subscriber_id: subscription.subscriberId,
    subscriber_type: subscription.subscriberType.toLowerCase(),
    subscribable_id: subscription.subscribableId,
    subscribable_type: subscription.subscribableType.toLowerCase(),
    account_id: subscription.accountId,
  };
}

export const notificationSubscriptionRoutes: RestRoute[] = [
  {
    method: 'get',
    path: '/users/:id/notification_subscriptions',
    operation: document('./operations/list-notification-subscriptions.graphql'),
    variables: ({ params, query }) => {
      const page = classicPagination(query);
      return { userId: params.id, first: page.limit, offset: page.offset, withTotal: page.total };
    },
    respond: (data: ListNotificationSubscriptionsQuery, { query }) => {
      const page = classicPagination(query);
      const list = data.notificationSubscriptions;
      return {
        status: 200,
        body: {
          // The name is in both places: the schema puts it beside the subscription, its example inside.
          subscriptions: list.nodes.map((node) => ({
            subscription: { ...presentSubscription(node), subscribable_name: node.subscribableName ?? null },
            subscribable_name: node.subscribableName ?? null,
          })),
          limit: page.limit,
          offset: page.offset,
          more: list.pageInfo.hasNextPage,
          total: list.totalCount ?? null,
        },
      };
    },
  } satisfies RestRoute<ListNotificationSubscriptionsQuery>,
  {
    method: 'post',
    path: '/users/:id/notification_subscriptions',
    operation: document('./operations/create-notification-subscriptions.graphql'),
    variables: ({ params, body }) => ({ input: { userId: params.id, subscribables: subscribablesFromBody(body) } }),
    respond: (data: CreateNotificationSubscriptionsMutation) => ({
      status: 200,
      body: {
        subscriptions: data.createNotificationSubscriptions.subscriptions.map((attempt) => ({
          ...presentSubscription(attempt),
          result: attempt.result.toLowerCase(),
        })),
      },
    }),
  } satisfies RestRoute<CreateNotificationSubscriptionsMutation>,
  {
    method: 'post',
    path: '/users/:id/notification_subscriptions/unsubscribe',
    operation: document('./operations/remove-notification-subscriptions.graphql'),
    variables: ({ params, body }) => ({ input: { userId: params.id, subscribables: subscribablesFromBody(body) } }),
    respond: (data: RemoveNotificationSubscriptionsMutation) => ({
      status: 200,
      body: {
        deleted_count: data.removeNotificationSubscriptions.deletedCount,
        unauthorized_count: data.removeNotificationSubscriptions.unauthorizedCount,
        non_existent_count: data.removeNotificationSubscriptions.nonExistentCount,
      },
    }),
  } satisfies RestRoute<RemoveNotificationSubscriptionsMutation>,
];
