import type { Principal } from '../auth/principal.js';
import type { ExecutableRow } from '../faces/rest/executor.js';
import type { OperationDocument } from '../rest/route.js';

export interface ScimRequest {
  params: Record<string, string>;
  query: Record<string, string | string[] | undefined>;
  body: unknown;
  principal: Principal;
  /** The versions `If-Match` names (weak or strong; `*` is no condition), when sent. */
  ifMatch?: readonly string[];
  apiUrl: string;
}

export interface ScimResponse {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

/** What the SCIM OpenAPI document says of a row (src/scim/scim.openapi.ts). */
export interface ScimOperationDescription {
  operationId: string;
  summary: string;
  description?: string;
  parameters?: ('id' | 'filter' | 'startIndex' | 'count' | 'If-Match')[];
  requestSchema?: string;
  responses: Record<number, { description: string; schema?: string }>;
}

/**
 * One row of the SCIM route table, like a REST row: method and path, the GraphQL operation that
 * serves it, how the request maps to variables, and the SCIM envelope. A read-modify-write row
 * (PATCH) names the operation that reads the current resource first; its data is handed to
 * `variables`, and its version is what `If-Match` is checked against.
 */
export interface ScimRoute<TData = any, TCurrent = any> extends ExecutableRow {
  method: 'get' | 'post' | 'put' | 'patch' | 'delete';
  path: string;
  operation: OperationDocument;
  current?: { operation: OperationDocument; variables(request: ScimRequest): Record<string, unknown>; version(data: TCurrent): string };
  variables(request: ScimRequest, current?: TCurrent): Record<string, unknown>;
  respond(data: TData, request: ScimRequest): ScimResponse;
  description: ScimOperationDescription;
}
