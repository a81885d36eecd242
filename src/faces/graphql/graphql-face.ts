import type { ApolloServer } from '@apollo/server';
import express, { type Express, type NextFunction, type Request, type Response } from 'express';
import { AuthenticationError } from '../../errors/domain-errors.js';
import type { Context } from '../../graphql/context.js';
import { classifyError } from '../../graphql/errors.js';
import type { Face } from '../../http/face.js';
import { idempotentWrites, type IdempotencyOptions } from '../../http/idempotency.js';
import { inSequence } from '../../http/in-sequence.js';
import { trustedDocumentsOnly, type TrustedDocuments } from '../../http/trusted-documents.js';
import { graphqlOperationScope } from '../../observability/http.js';
import { sendGraphQLError } from './error-response.js';
import { explorer } from './explorer.js';
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
  /** GRAPHQL_LANDING_PAGE: the explorer for a browser's `GET /graphql`; off, a short page says where the API is instead. */
  landingPage: boolean;
  idempotency: IdempotencyOptions;
  /** `GRAPHQL_TRUSTED_DOCUMENTS`: only the manifest's operations run. */
  trustedDocuments?: TrustedDocuments;
}

/** Whether the request asks to run an operation (a browser's plain `GET /graphql` asks for the explorer page). */
function runsAnOperation(req: Request): boolean {
  return req.method !== 'GET' || req.query.query !== undefined || req.query.extensions !== undefined;
}

/**
 * An operation needs a credential that works: a missing, unknown, revoked or expired one is HTTP 401
 * with `WWW-Authenticate` before the document is read, whatever it asks (even `{ __typename }`), so
 * a client's refresh logic keyed on 401 fires, as on REST.
 */
function credentialRequired(req: Request, res: Response, next: NextFunction): void {
  const { authentication } = res.locals.context as Context;
  if (authentication.status === 'authenticated' || !runsAnOperation(req)) return next();
  const rejected = authentication.status === 'rejected';
  res.set('WWW-Authenticate', rejected ? 'Bearer realm="api", error="invalid_token"' : 'Bearer realm="api"');
  graphqlFace.answer(res, rejected ? authentication.error : new AuthenticationError());
}

const NO_EXPLORER_PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>GraphQL API</title></head>
<body><h1>GraphQL API</h1>
<p>This is the GraphQL endpoint. Send operations with <code>POST /graphql</code> and a credential
(<code>Authorization: Token token=...</code> or <code>Bearer ...</code>); subscriptions run over WebSocket here.</p>
<p>The explorer is off on this server (GRAPHQL_LANDING_PAGE): use one on your machine, or the schema in the API's documentation.</p>
</body></html>
`;

/** A browser's plain visit when the explorer is off: a short page saying where the API is, never a refusal meant for scripts. */
function noExplorerPage(req: Request, res: Response, next: NextFunction): void {
  if (runsAnOperation(req) || req.accepts(['application/json', 'text/html']) !== 'text/html') return next();
  res.status(200).type('text/html; charset=utf-8').set('Cache-Control', 'no-store').send(NO_EXPLORER_PAGE);
}

/** Mounts `/graphql` after the request context and the rate budget: the credential, screening, then Apollo. */
export function mountGraphQLFace(app: Express, options: GraphQLFaceOptions): void {
  app.use(
    GRAPHQL_PATH,
    inSequence(
      graphqlOperationScope(),
      options.landingPage ? explorer : noExplorerPage,
      credentialRequired,
      express.json({ limit: '1mb' }),
      screenGraphQLRequest,
      ...(options.trustedDocuments ? [trustedDocumentsOnly(options.trustedDocuments)] : []),
      idempotentWrites('graphql', options.idempotency),
      apolloHttpHandler(options.apollo, { context: async ({ res }) => res.locals.context as Context }),
    ),
  );
}
