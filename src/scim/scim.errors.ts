import type { Response } from 'express';
import { DomainError, DuplicateValueError, StaleVersionError, type ErrorKind } from '../errors/domain-errors.js';
import { ERROR_TABLE } from '../errors/error-table.js';
import { classifyError } from '../graphql/errors.js';

export const SCIM_ERROR_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:Error';
export const SCIM_CONTENT_TYPE = 'application/scim+json; charset=utf-8';

/** RFC 7644 section 3.12's detail codes. */
export type ScimType = 'invalidFilter' | 'tooMany' | 'uniqueness' | 'mutability' | 'invalidSyntax' | 'invalidPath' | 'noTarget' | 'invalidValue' | 'invalidVers' | 'sensitive';

/**
 * Bad input only the SCIM face can name (a filter outside the grammar, a read-only path): invalid
 * input like any other for the error table, with the SCIM detail code it answers with.
 */
export class ScimInputError extends DomainError {
  constructor(readonly scimType: ScimType, detail: string) {
    super('invalid_input', 'Invalid Input Provided', [detail]);
  }
}

export interface ScimErrorBody {
  schemas: [typeof SCIM_ERROR_SCHEMA];
  status: string;
  scimType?: ScimType;
  detail: string;
}

/** What invalid input of each kind is, in SCIM's words, unless the error names its own code. */
const SCIM_TYPE_OF_KIND: Partial<Record<ErrorKind, ScimType>> = { invalid_input: 'invalidValue', missing_argument: 'invalidValue', unprocessable: 'invalidValue' };

/**
 * The one translation of an error on the SCIM face: the status of the error table (a duplicate
 * value 409 `uniqueness`, a stale version 412, SCIM's own input errors their code), the SCIM
 * error schema, and for anything unexpected only a request id to quote.
 */
export function scimError(error: unknown, requestId: string): { status: number; body: ScimErrorBody; kind: ErrorKind } {
  const classified = classifyError(error);
  const original = originalError(error);
  let status = ERROR_TABLE[classified.kind].httpStatus;
  let scimType = SCIM_TYPE_OF_KIND[classified.kind];
  if (original instanceof ScimInputError) scimType = original.scimType;
  if (original instanceof DuplicateValueError) [status, scimType] = [409, 'uniqueness'];
  if (original instanceof StaleVersionError) [status, scimType] = [412, undefined];
  const detail = classified.kind === 'internal'
    ? `Internal server error; quote request id ${requestId} when reporting it.`
    : [classified.message, ...classified.details].filter((text, index, all) => all.indexOf(text) === index).join(': ');
  return { status, kind: classified.kind, body: { schemas: [SCIM_ERROR_SCHEMA], status: String(status), ...(scimType ? { scimType } : {}), detail } };
}

function originalError(error: unknown): unknown {
  let current = error as { originalError?: unknown } | undefined;
  while (current && typeof current === 'object' && current.originalError && current.originalError !== current) current = current.originalError as typeof current;
  return current;
}

export function sendScim(res: Response, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.status(status).set(headers);
  if (body === undefined) {
    res.end();
    return;
  }
  res.type(SCIM_CONTENT_TYPE).send(JSON.stringify(body));
}

export function sendScimError(res: Response, error: unknown): ReturnType<typeof scimError> {
  const translated = scimError(error, String(res.locals.requestId ?? ''));
  res.locals.errorCode = translated.body.status;
  sendScim(res, translated.status, translated.body, translated.kind === 'unavailable' ? { 'Retry-After': '1' } : {});
  return translated;
}
