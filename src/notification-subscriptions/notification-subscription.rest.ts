import { UnprocessableError } from '../errors/domain-errors.js';
import type {
  CreateNotificationSubscriptionsMutation,
  ListNotificationSubscriptionsQuery,
  RemoveNotificationSubscriptionsMutation,
} from '../graphql/generated/operations.js';
import type { RestRoute } from '../rest/route.js';
import { operationDocument } from '../rest/route.js';
import { classicPagination, classicPaginationParameters, pathParameter } from '../rest/params.js';
import type { BodyDescription } from '../rest/description.js';
import { classicPage, schemaRef } from '../rest/openapi-schemas.js';
import type { oas31 } from 'openapi3-ts';
import { excerpt } from '../graphql/input-bounds.js';
import { MAX_SUBSCRIBABLE_FIELD_LENGTH, SUBSCRIBABLE_TYPES, isSubscribableType } from './subscribable.entity.js';
import { MAX_SUBSCRIBABLES_PER_CALL } from './notification-subscriptions.service.js';

const document = (file: string) => operationDocument(import.meta.url, file);

/**
 * The `subscribables` of a subscribe or unsubscribe body, as GraphQL input. Every payload problem
 * is 422; the count and duplicate rules are the service's, shared with GraphQL.
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
    // Checked here, not only by the shared input bounds, so an over-long id is a payload problem (422) like the rest.
    else if (id.length > MAX_SUBSCRIBABLE_FIELD_LENGTH) problems.push(`${where}.subscribable_id must be at most ${MAX_SUBSCRIBABLE_FIELD_LENGTH} characters`);
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

const subscriptionProperties: Record<string, oas31.SchemaObject> = {
  subscriber_id: { type: 'string' },
  subscriber_type: { type: 'string', enum: ['user'] },
  subscribable_id: { type: 'string' },
  subscribable_type: { type: 'string', enum: [...SUBSCRIBABLE_TYPES] },
  account_id: { type: 'string' },
};

export const notificationSubscriptionSchemas: Record<string, oas31.SchemaObject> = {
  NotificationSubscribable: {
    type: 'object',
    required: ['subscribable_type', 'subscribable_id'],
    properties: {
      subscribable_type: { type: 'string', enum: [...SUBSCRIBABLE_TYPES] },
      subscribable_id: { type: 'string', minLength: 1, maxLength: MAX_SUBSCRIBABLE_FIELD_LENGTH },
    },
  },
  NotificationSubscription: { type: 'object', required: Object.keys(subscriptionProperties), properties: subscriptionProperties },
  NotificationSubscriptionWithContext: {
    type: 'object',
    required: [...Object.keys(subscriptionProperties), 'result'],
    properties: {
      ...subscriptionProperties,
      result: { type: 'string', enum: ['success', 'duplicate', 'unauthorized'], description: '`unauthorized`: the entity is not in the caller\'s account.' },
    },
  },
};

const subscribablesBody: BodyDescription<ReturnType<typeof subscribablesFromBody>> = {
  description: `\`{"subscribables": [...]}\`: 1 to ${MAX_SUBSCRIBABLES_PER_CALL} distinct entities. Every payload problem is 422.`,
  schema: {
    type: 'object',
    required: ['subscribables'],
    properties: { subscribables: { type: 'array', minItems: 1, maxItems: MAX_SUBSCRIBABLES_PER_CALL, uniqueItems: true, items: schemaRef('NotificationSubscribable') } },
  },
  read: subscribablesFromBody,
};

const userIdPath = pathParameter('id', 'The id of the subscribing user.');

export const notificationSubscriptionRoutes: RestRoute[] = [
  {
    method: 'get',
    path: '/users/:id/notification_subscriptions',
    operation: document('./operations/list-notification-subscriptions.graphql'),
    description: {
      operationId: 'getUserNotificationSubscriptions',
      summary: "List a user's notification subscriptions",
      description: 'The user themself, or can_update_user.',
      tags: ['Users'],
      scope: 'subscribers.read',
      parameters: [userIdPath, ...classicPaginationParameters],
      responses: {
        200: {
          description: 'A page of subscriptions.',
          schema: classicPage('subscriptions', {
            type: 'object',
            required: ['subscription', 'subscribable_name'],
            properties: {
              subscription: { allOf: [schemaRef('NotificationSubscription'), { type: 'object', properties: { subscribable_name: { type: ['string', 'null'] } } }] },
              subscribable_name: { type: ['string', 'null'] },
            },
          }),
        },
      },
      errors: [400, 403, 404],
    },
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
    description: {
      operationId: 'createUserNotificationSubscriptions',
      summary: 'Subscribe a user to entities',
      description: 'Each entity gets a result: success, duplicate (already subscribed) or unauthorized (not in the caller\'s account).',
      tags: ['Users'],
      scope: 'subscribers.write',
      parameters: [userIdPath],
      requestBody: subscribablesBody,
      responses: { 200: { description: 'One result per entity.', schema: { type: 'object', required: ['subscriptions'], properties: { subscriptions: { type: 'array', items: schemaRef('NotificationSubscriptionWithContext') } } } } },
      errors: [403, 404, 422],
    },
    variables: ({ params, body }) => ({ input: { userId: params.id, subscribables: subscribablesBody.read(body) } }),
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
    description: {
      operationId: 'unsubscribeUserNotificationSubscriptions',
      summary: 'Unsubscribe a user from entities',
      tags: ['Users'],
      scope: 'subscribers.write',
      parameters: [userIdPath],
      requestBody: subscribablesBody,
      responses: {
        200: {
          description: 'Removed / entity not in the caller\'s account / no such subscription.',
          schema: {
            type: 'object',
            required: ['deleted_count', 'unauthorized_count', 'non_existent_count'],
            properties: { deleted_count: { type: 'integer', minimum: 0 }, unauthorized_count: { type: 'integer', minimum: 0 }, non_existent_count: { type: 'integer', minimum: 0 } },
          },
        },
      },
      errors: [403, 404, 422],
    },
    variables: ({ params, body }) => ({ input: { userId: params.id, subscribables: subscribablesBody.read(body) } }),
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
