import { HeaderMap, type ApolloServer, type HTTPGraphQLRequest } from '@apollo/server';
import { expressMiddleware, type ExpressMiddlewareOptions } from '@as-integrations/express5';
import { parse as urlParse } from 'node:url';
import type { NextFunction, Request, Response } from 'express';
import { sendText } from '../../rest/envelopes.js';
import { documentErrorStatus, isDocumentError } from './error-response.js';

/** The Content-Types Apollo answers with that Express's `res.send` leaves exactly as they are. */
const SENT_AS_GIVEN = new Set(['application/json; charset=utf-8', 'application/graphql-response+json; charset=utf-8']);

/**
 * A URL whose query string `url.parse` hands back as it is (measured against it on random URLs):
 * any other character (`@`, `#`, quotes, brackets, spaces, ...) can make it escape, reinterpret
 * or throw, and such a URL's query string is taken by `url.parse` itself, as `expressMiddleware` does.
 */
const PLAIN_URL = /^\/[A-Za-z0-9\-._~%/?=&+,;:!$*()]*$/;

/**
 * Apollo Server on Express, answering what `@as-integrations/express5`'s `expressMiddleware`
 * answers (status, headers in the same order, body, ETag), with less per-request work: the query
 * string of a plain URL is cut from it instead of parsed by `url.parse`, and a complete body goes out
 * through `sendText`, head and text in one socket write (`res.send` copies a body of 1,000 bytes
 * or more into a Buffer, which Node then writes with the head as two). Anything else (an
 * incremental delivery, another Content-Type) still goes through `res.send` / `res.write`. One
 * difference, GraphQL over HTTP's: a document error under `application/json` is 200, not 400.
 */
export function apolloHttpHandler<TContext extends object>(server: ApolloServer<TContext>, options: Required<Pick<ExpressMiddlewareOptions<TContext>, 'context'>>) {
  const { context } = options;
  const theIntegration = expressMiddleware(server, options);
  return async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    // A body-less request cannot come from this app (its JSON parser runs first); expressMiddleware answers it.
    if (!('body' in req)) {
      await theIntegration(req, res, next);
      return;
    }
    const headers = new HeaderMap();
    for (const key in req.headers) {
      const value = req.headers[key];
      if (value !== undefined) headers.set(key, Array.isArray(value) ? value.join(', ') : value);
    }
    const httpGraphQLRequest: HTTPGraphQLRequest = { method: req.method.toUpperCase(), headers, search: PLAIN_URL.test(req.url) ? queryStringOf(req.url) : (urlParse(req.url).search ?? ''), body: req.body };
    const response = await server.executeHTTPGraphQLRequest({ httpGraphQLRequest, context: () => context({ req, res }) });
    for (const [key, value] of response.headers) res.setHeader(key, value);
    res.statusCode = response.status || 200;
    if (response.body.kind === 'complete') {
      const contentType = res.getHeader('content-type');
      if (res.statusCode === 400 && typeof contentType === 'string' && isDocumentError(httpGraphQLRequest)) res.statusCode = documentErrorStatus(contentType);
      if (typeof contentType === 'string' && SENT_AS_GIVEN.has(contentType) && res.statusCode !== 205) sendText(res, response.body.string, contentType);
      else res.send(response.body.string);
      return;
    }
    for await (const chunk of response.body.asyncIterator) {
      res.write(chunk);
      if (typeof (res as { flush?: unknown }).flush === 'function') (res as unknown as { flush(): void }).flush();
    }
    res.end();
  };
}

/** What `url.parse(url).search ?? ''` is for a `PLAIN_URL`: from the first `?` on. */
function queryStringOf(url: string): string {
  const start = url.indexOf('?');
  return start === -1 ? '' : url.slice(start);
}
