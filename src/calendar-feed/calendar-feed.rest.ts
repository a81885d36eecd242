import type { RegenerateUserCalendarKeyMutation } from '../graphql/generated/operations.js';
import { operationDocument, type RestRoute } from '../rest/route.js';
import { presentUser } from '../users/user.rest.js';

/**
 * `POST /users/{id}/regenerate_private_url_key`: a verb, so the body is shaped like show (with both
 * calendar URLs, which carry the new key) and also carries `private_url_key` as the public spec has it.
 */
export const calendarFeedRoutes: RestRoute[] = [
  {
    method: 'post',
    path: '/users/:id/regenerate_private_url_key',
    operation: operationDocument(import.meta.url, './operations/regenerate-user-calendar-key.graphql', '../users/operations/user-fields.graphql'),
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
