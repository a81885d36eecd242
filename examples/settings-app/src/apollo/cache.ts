import { InMemoryCache } from '@apollo/client';
import { relayStylePagination } from '@apollo/client/utilities';

/**
 * Normalized by `__typename` + `id` (every object the API lets a client cache has an `id`), so a
 * mutation's answer updates every page showing that object.
 */
export function createCache(): InMemoryCache {
  return new InMemoryCache({
    typePolicies: {
      Query: {
        fields: {
          // One list per search term; "Load more" appends the next page (Relay cursors).
          users: relayStylePagination(['query']),
        },
      },
      User: {
        fields: {
          // The server's list is the truth: an answer replaces the cached one.
          signInSessions: { merge: false },
          apiKeys: { keyArgs: ['statuses'], merge: false },
        },
      },
    },
  });
}
