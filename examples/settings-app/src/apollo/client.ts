import { ApolloClient, ApolloLink, HttpLink } from '@apollo/client';
import { SetContextLink } from '@apollo/client/link/context';
import { ErrorLink } from '@apollo/client/link/error';
import { GraphQLWsLink } from '@apollo/client/link/subscriptions';
import { getMainDefinition } from '@apollo/client/utilities';
import { createClient } from 'graphql-ws';
import { Kind, OperationTypeNode } from 'graphql';
import { from, mergeMap, throwError } from 'rxjs';
import { parseBearerChallenge, STEP_UP_ERROR } from '../auth/bearer-challenge';
import type { AuthSession } from '../auth/session';
import { createCache } from './cache';

/** Sends this tab's access token on every HTTP request. */
function bearerLink(session: AuthSession): ApolloLink {
  return new SetContextLink((previous) => ({
    headers: { ...previous.headers, authorization: `Bearer ${session.accessToken() ?? ''}` },
  }));
}

/**
 * Keyed on HTTP 401, whatever the document: a step-up challenge shows the prompt (the error still
 * reaches the page); any other 401 (expired, revoked) refreshes once and retries, or signs in again.
 */
function reauthorizeLink(session: AuthSession): ApolloLink {
  return new ErrorLink(({ error, operation, forward }) => {
    const response = operation.getContext().response as Response | undefined;
    if (response?.status !== 401) return;
    const challenge = parseBearerChallenge(response.headers.get('www-authenticate'));
    if (challenge.error === STEP_UP_ERROR) {
      session.requireStepUp(challenge.maxAge ?? 0);
      return;
    }
    if (operation.getContext().retriedAfterRefresh) {
      void session.signInAgain();
      return;
    }
    operation.setContext({ retriedAfterRefresh: true });
    return from(session.refresh()).pipe(mergeMap((refreshed) => {
      if (refreshed) return forward(operation);
      void session.signInAgain();
      return throwError(() => error);
    }));
  });
}

/** Subscriptions over graphql-ws; the token goes in `connection_init`, read when the socket (re)connects. */
function socketLink(apiUrl: string, session: AuthSession): ApolloLink {
  const url = new URL('/graphql', apiUrl);
  url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
  return new GraphQLWsLink(createClient({ url: url.href, connectionParams: () => ({ authorization: `Bearer ${session.accessToken() ?? ''}` }) }));
}

function isSubscription({ query }: ApolloLink.Operation): boolean {
  const definition = getMainDefinition(query);
  return definition.kind === Kind.OPERATION_DEFINITION && definition.operation === OperationTypeNode.SUBSCRIPTION;
}

export function createApolloClient(apiUrl: string, session: AuthSession): ApolloClient {
  const http = ApolloLink.from([reauthorizeLink(session), bearerLink(session), new HttpLink({ uri: new URL('/graphql', apiUrl).href })]);
  return new ApolloClient({
    link: ApolloLink.split(isSubscription, socketLink(apiUrl, session), http),
    cache: createCache(),
  });
}
