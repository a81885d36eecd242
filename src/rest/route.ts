import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Principal } from '../auth/principal.js';
import type { OperationDescription } from './description.js';

export interface RestRequest {
  params: Record<string, string>;
  query: Record<string, string | string[] | undefined>;
  body: unknown;
  principal: Principal;
}

export interface RestResponse {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

/** A GraphQL document kept as `.graphql` files next to the feature that owns it. */
export interface OperationDocument {
  files: string[];
  source: string;
}

/**
 * One row of the REST route table: the method and path an existing integration calls, the
 * GraphQL operation that serves it, how the request maps to variables, and the envelope.
 */
export interface RestRoute<TData = any> {
  method: 'get' | 'post' | 'put' | 'delete';
  path: string;
  operation: OperationDocument;
  /** May throw a DomainError for a bad parameter; runs after authentication. */
  variables(request: RestRequest): Record<string, unknown>;
  respond(data: TData, request: RestRequest): RestResponse;
  /** For deprecated endpoints: the successor's method and path, sent as `Deprecation` and `Link` headers. */
  successor?: string;
  /**
   * The route's OpenAPI description (required: the document is assembled from the rows). Its
   * parameters' and body's readers run before `variables`, so a request the document refuses is refused.
   */
  description: OperationDescription;
}

/** Reads `.graphql` files relative to the calling module (`import.meta.url`); the build copies them beside the output. */
export function operationDocument(moduleUrl: string, ...relativePaths: string[]): OperationDocument {
  const files = relativePaths.map((relative) => fileURLToPath(new URL(relative, moduleUrl)));
  return { files, source: files.map((file) => fs.readFileSync(file, 'utf8')).join('\n') };
}
