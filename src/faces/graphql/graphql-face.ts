import type { ApolloServer } from '@apollo/server';
import express, { type Express } from 'express';
import type { Context } from '../../graphql/context.js';
import { classifyError } from '../../graphql/errors.js';
import type { Face } from '../../http/face.js';
import { idempotentWrites, type IdempotencyOptions } from '../../http/idempotency.js';
import { inSequence } from '../../http/in-sequence.js';
import { trustedDocumentsOnly, type TrustedDocuments } from '../../http/trusted-documents.js';
import { graphqlOperationScope } from '../../observability/http.js';
import { sendGraphQLError } from './error-response.js';
import { apolloHttpHandler } from './http-handler.js';
import { screenGraphQLRequest } from './screen-request.js';

/** Where GraphQL is served over HTTP (POST and GET) and over WebSocket (subscriptions). */
export const GRAPHQL_PATH = '/graphql';

/** The GraphQL face: errors outside execution answered as a GraphQL response, in the negotiated media type. */
export const graphqlFace: Face = {
  name: 'graphql',
  matches: (path) => path === GRAPHQL_PATH,
  answer(res, error) {
    const { kind, message, details } = classifyError(error);
    if (kind === 'internal') return sendGraphQLError(res, 'internal', 'Internal server error', { requestId: res.locals.requestId });
    if (kind === 'unavailable') res.set('Retry-After', '1');
    sendGraphQLError(res, kind, details[0] ?? message);
  },
};

export interface GraphQLFaceOptions {
  apollo: ApolloServer<Context>;
  idempotency: IdempotencyOptions;
  /** `GRAPHQL_TRUSTED_DOCUMENTS`: only the manifest's operations run. */
  trustedDocuments?: TrustedDocuments;
}

/** Mounts `/graphql` after the request context and the rate budget: screening, then Apollo. */
export function mountGraphQLFace(app: Express, options: GraphQLFaceOptions): void {
  app.use(
    GRAPHQL_PATH,
    inSequence(
      graphqlOperationScope(),
      express.json({ limit: '1mb' }),
      screenGraphQLRequest,
      ...(options.trustedDocuments ? [trustedDocumentsOnly(options.trustedDocuments)] : []),
      idempotentWrites('graphql', options.idempotency),
      apolloHttpHandler(options.apollo, { context: async ({ res }) => res.locals.context as Context }),
    ),
  );
}
