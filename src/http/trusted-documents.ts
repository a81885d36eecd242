import { createHash } from 'node:crypto';
import fs from 'node:fs';
import type { NextFunction, Request, Response } from 'express';
import { sendGraphQLError } from '../faces/graphql/error-response.js';

/**
 * The operations a deployment's own clients send, from Apollo's persisted-query manifest
 * (`@apollo/generate-persisted-query-manifest`): `{"format": "apollo-persisted-query-manifest",
 * "version": 1, "operations": [{"id", "name", "type", "body"}]}`. Each body is known by its id
 * and by the SHA-256 of its text (the hash automatic persisted queries send).
 */
export interface TrustedDocuments {
  bodies: Map<string, string>;
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

export function readTrustedDocuments(file: string): TrustedDocuments {
  const manifest = JSON.parse(fs.readFileSync(file, 'utf8')) as { format?: unknown; version?: unknown; operations?: unknown };
  if (manifest.format !== 'apollo-persisted-query-manifest' || manifest.version !== 1 || !Array.isArray(manifest.operations)) {
    throw new Error(`${file} is not an Apollo persisted-query manifest (format "apollo-persisted-query-manifest", version 1, operations)`);
  }
  const bodies = new Map<string, string>();
  for (const operation of manifest.operations as { id?: unknown; body?: unknown }[]) {
    if (typeof operation.id !== 'string' || typeof operation.body !== 'string') throw new Error(`${file}: every operation needs a string id and body`);
    bodies.set(operation.id, operation.body);
    bodies.set(sha256(operation.body), operation.body);
  }
  return { bodies };
}

/** `extensions.persistedQuery.sha256Hash`, the extensions given as an object or (GET) as JSON text. */
function persistedQueryHash(extensions: unknown): unknown {
  if (typeof extensions === 'string') {
    try {
      extensions = JSON.parse(extensions);
    } catch {
      return undefined;
    }
  }
  return (extensions as { persistedQuery?: { sha256Hash?: unknown } } | null | undefined)?.persistedQuery?.sha256Hash;
}

/** What a refused document is told, on every transport. */
export const UNTRUSTED_DOCUMENT = 'This server runs only its trusted documents: this operation is not one of them.';

/**
 * The listed text a request names (by id or hash, `extensions.persistedQuery.sha256Hash`) or sends
 * (exactly a listed text), or undefined when it is not one of the trusted documents. The one rule
 * for every transport that runs a client's document: `/graphql` over HTTP and over WebSocket.
 */
export function trustedBody(trusted: TrustedDocuments, query: unknown, extensions: unknown): string | undefined {
  const hash = persistedQueryHash(extensions);
  const listed = typeof hash === 'string' ? trusted.bodies.get(hash) : typeof query === 'string' ? trusted.bodies.get(sha256(query)) : undefined;
  if (listed === undefined || (typeof query === 'string' && query !== listed)) return undefined;
  return listed;
}

/**
 * With `GRAPHQL_TRUSTED_DOCUMENTS`, `/graphql` runs only the manifest's operations: named by id
 * or hash (`extensions.persistedQuery.sha256Hash`, the query then optional) or sent in full with
 * exactly a listed text. Anything else is refused with PERSISTED_QUERY_NOT_FOUND before parsing.
 * The REST and SCIM faces run their own documents through their executor, not through here; the
 * WebSocket's subscriptions pass `trustedBody` too (src/faces/ws/socket-server.ts).
 */
export function trustedDocumentsOnly(trusted: TrustedDocuments) {
  return (req: Request, res: Response, next: NextFunction): void => {
    const get = req.method === 'GET';
    const source = (get ? req.query : req.body) as { query?: unknown; extensions?: unknown } | undefined;
    const query = source?.query;
    const listed = trustedBody(trusted, query, source?.extensions);
    if (listed === undefined) {
      return sendGraphQLError(res, 'invalid_input', UNTRUSTED_DOCUMENT, { code: 'PERSISTED_QUERY_NOT_FOUND' });
    }
    // Named by its id only: the listed text is the query (Apollo then checks the hash it is sent with, so a manifest id that is not its body's hash is sent without one).
    if (typeof query !== 'string' && source && !get) {
      source.query = listed;
      const hash = persistedQueryHash(source.extensions);
      if (typeof hash === 'string' && hash !== sha256(listed)) delete (source as { extensions?: unknown }).extensions;
    }
    if (get && typeof query !== 'string') return sendGraphQLError(res, 'invalid_input', 'Send trusted documents by id with POST.', { code: 'PERSISTED_QUERY_NOT_FOUND' });
    next();
  };
}
