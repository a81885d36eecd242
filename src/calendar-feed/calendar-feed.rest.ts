import type { RegenerateUserCalendarKeyMutation } from '../graphql/generated/operations.js';
import { operationDocument, type RestRoute } from '../rest/route.js';
import { presentUser } from '../users/user.rest.js';
import { pathParameter } from '../rest/params.js';
import { schemaRef } from '../rest/openapi-schemas.js';

/**
 * `POST /users/{id}/regenerate_private_url_key`: a verb, so the body is shaped like show (with both
 * calendar URLs, which carry the new key) and also carries `private_url_key` as the public spec has it.
 */
export const calendarFeedRoutes: RestRoute[] = [
  {
    method: 'post',
    path: '/users/:id/regenerate_private_url_key',
    operation: operationDocument(import.meta.url, './operations/regenerate-user-calendar-key.graphql', '../users/operations/user-fields.graphql'),
    description: {
      operationId: 'regenerateUserPrivateUrlKey',
      summary: "Regenerate a user's calendar feed key",
      description: 'The old feed URL stops working before this answers. The user themself (any role), or can_update_user for anyone.',
      tags: ['Users', 'Calendar feed'],
      scope: 'users.write',
      parameters: [pathParameter('id', 'The id of the user.')],
      responses: {
        200: {
          description: 'The new key, and the user with both new calendar URLs.',
          schema: {
            type: 'object',
            required: ['private_url_key', 'user'],
            properties: {
              private_url_key: { type: 'string', pattern: '^[A-Za-z0-9_-]{27}$' },
              user: { allOf: [schemaRef('User'), { type: 'object', required: ['http_cal_url', 'web_cal_url'] }] },
            },
          },
        },
      },
      errors: [403, 404],
    },
    variables: ({ params }) => ({ input: { userId: params.id } }),
    respond: (data: RegenerateUserCalendarKeyMutation) => ({
      status: 200,
      body: {
        private_url_key: data.regenerateUserCalendarKey.privateUrlKey,
        user: presentUser(data.regenerateUserCalendarKey.user),
      },
    }),
  } satisfies RestRoute<RegenerateUserCalendarKeyMutation>,
];
