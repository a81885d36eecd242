import type { oas31 } from 'openapi3-ts';
import type { Scope } from '../auth/scopes.js';

export type Schema = oas31.SchemaObject | oas31.ReferenceObject;

/** What a parameter or body reader sees: the request as Express parsed it. */
export interface RawRequest {
  params: Record<string, string>;
  query: Record<string, string | string[] | undefined>;
  body: unknown;
}

/**
 * A path or query parameter: how the document describes it and how the route reads it. `read`
 * is the route's own check (throwing the DomainError that names the parameter), so what the
 * document promises and what the route refuses cannot disagree.
 */
export interface ParameterDescription<T = unknown> {
  name: string;
  in: 'path' | 'query';
  description: string;
  required?: boolean;
  schema: Schema;
  /** `include[]`-style parameters: repeated, or comma-separated. */
  explode?: boolean;
  read?(request: RawRequest): T;
}

/** A JSON request body: its schema, and the reader the route maps variables with. */
export interface BodyDescription<T = unknown> {
  description: string;
  schema: Schema;
  read(body: unknown): T;
}

export interface SuccessResponse {
  description: string;
  /** Absent for a response without a body (204). */
  schema?: Schema;
  headers?: Record<string, oas31.HeaderObject>;
}

/** Error statuses a route gives because of what it is asked (the statuses every API route may give are added for all). */
export type RouteErrorStatus = 400 | 403 | 404 | 409 | 415 | 422;

/**
 * The description every REST route row carries: the OpenAPI document is assembled from these
 * at start, and the executor validates each request's described parameters and body with them.
 */
export interface OperationDescription {
  operationId: string;
  summary: string;
  description?: string;
  tags: string[];
  /** The OAuth scope a bearer token needs (API keys are not scope-limited). */
  scope: Scope;
  parameters?: ParameterDescription[];
  requestBody?: BodyDescription;
  responses: Partial<Record<200 | 201 | 204, SuccessResponse>>;
  errors: RouteErrorStatus[];
}

/** A plain HTTP route (outside the v2 API: no credential, no versioning), described for the document. */
export interface PlainOperationDescription {
  method: 'get' | 'post';
  /** OpenAPI path template, e.g. `/private/{key}/feed`. */
  path: string;
  /** Which public base URL serves it (the feed may live on its own host). */
  server: 'api' | 'feed';
  operation: oas31.OperationObject;
}

/** Reads every described parameter and the body: the first that is wrong throws the error naming it. */
export function validateDescribedInput(description: OperationDescription, request: RawRequest): void {
  for (const parameter of description.parameters ?? []) parameter.read?.(request);
  description.requestBody?.read(request.body);
}
