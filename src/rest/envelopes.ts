import type { Response } from 'express';
import type { ErrorKind } from '../errors/domain-errors.js';
import { ERROR_TABLE } from '../errors/error-table.js';

export interface ErrorEnvelope {
  error: { message: string; code: number; errors: string[] };
}

export function errorEnvelope(kind: ErrorKind, message: string, details: string[]): { status: number; body: ErrorEnvelope } {
  const translation = ERROR_TABLE[kind];
  return { status: translation.httpStatus, body: { error: { message, code: translation.apiErrorCode, errors: details } } };
}

export function sendJson(res: Response, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.status(status).set(headers);
  if (body === undefined) {
    res.end();
    return;
  }
  res.type('application/json; charset=utf-8').send(JSON.stringify(body));
}

export function sendError(res: Response, kind: ErrorKind, message: string, details: string[]): void {
  const { status, body } = errorEnvelope(kind, message, details);
  res.locals.errorCode = body.error.code;
  // A 503 always says when to come back, so clients and load balancers retry instead of failing.
  sendJson(res, status, body, kind === 'unavailable' ? { 'Retry-After': '1' } : {});
}
