import express, { type Express } from 'express';
import type { GraphQLSchema } from 'graphql';
import { classifyError } from '../../graphql/errors.js';
import type { FailureLog } from '../../http/answer-error.js';
import type { Face } from '../../http/face.js';
import { idempotentWrites, type IdempotencyOptions } from '../../http/idempotency.js';
import { inSequence } from '../../http/in-sequence.js';
import { sendError } from '../../rest/envelopes.js';
import type { RestRoute } from '../../rest/route.js';
import { prepareRoutes, restRouter } from './executor.js';
import { acceptVersioning, requireJsonBody } from './negotiation.js';

/** The v2 REST face: every path that is not another face's; errors in the v2 error envelope. */
export const restFace: Face = {
  name: 'rest',
  matches: () => true,
  answer(res, error) {
    const { kind, message, details } = classifyError(error);
    if (kind === 'internal') return sendError(res, 'internal', 'Internal Server Error', [`Quote request id ${res.locals.requestId} when reporting this error.`]);
    sendError(res, kind, message, details);
  },
};

export interface RestFaceOptions {
  schema: GraphQLSchema;
  routes: readonly RestRoute[];
  /** The vendor of the `Accept` media type (`application/vnd.<vendor>+json;version=2`). */
  apiVendor: string;
  idempotency: IdempotencyOptions;
  log: FailureLog;
}

/**
 * Mounts the route table after the request context and the rate budget: `Accept` versioning,
 * JSON bodies, `Idempotency-Key`, then each row's document executed through the schema. Every
 * row's document is prepared here, at start: a broken row stops the server from starting.
 */
export function mountRestFace(app: Express, options: RestFaceOptions): void {
  const prepared = prepareRoutes(options.schema, options.routes);
  app.use(inSequence(
    acceptVersioning(options.apiVendor),
    requireJsonBody,
    express.json({ limit: '1mb', type: ['application/json', 'application/*+json'] }),
    idempotentWrites('rest', options.idempotency),
    restRouter(prepared, options.schema, options.log),
  ));
}
