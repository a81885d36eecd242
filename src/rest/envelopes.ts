import { hash } from 'node:crypto';
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

const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

/**
 * Express's default (weak) entity tag of a body: its byte length in hex and the start of its
 * SHA-1 in base64, so conditional GETs keep working as they did under `res.send`.
 */
function weakEntityTag(body: string, length: number): string {
  return `W/"${length.toString(16)}-${hash('sha1', body, 'base64').slice(0, 27)}"`;
}

/**
 * Answers JSON with the same status line, headers and bytes as Express's `res.type(json).send(text)`
 * (Content-Type, Content-Length, weak ETag, 304 for a fresh conditional GET, no body for HEAD),
 * without its per-response work that changes nothing here: re-parsing the Content-Type it was
 * just given and copying the text into a Buffer to hash and send it. The text goes to Node as
 * it is, which writes it with the head in one socket write.
 */
export function sendJson(res: Response, status: number, body: unknown, headers?: Record<string, string>): void {
  res.statusCode = status;
  if (headers) res.set(headers);
  if (body === undefined) {
    res.end();
    return;
  }
  sendText(res, JSON.stringify(body), JSON_CONTENT_TYPE);
}

/**
 * Ends the response (its status already set) with `text` as Express's `res.send(text)` would
 * with this Content-Type, which must be one `res.send` leaves as it is (a lower-case type with
 * `; charset=utf-8`).
 */
export function sendText(res: Response, text: string, contentType: string): void {
  const length = Buffer.byteLength(text);
  res.setHeader('Content-Type', contentType);
  res.setHeader('Content-Length', length);
  if (!res.hasHeader('ETag')) res.setHeader('ETag', weakEntityTag(text, length));
  if (res.req.fresh) res.statusCode = 304;
  if (res.statusCode === 204 || res.statusCode === 304) {
    res.removeHeader('Content-Type');
    res.removeHeader('Content-Length');
    res.removeHeader('Transfer-Encoding');
    text = '';
  }
  if (res.req.method === 'HEAD') res.end();
  else res.end(text);
}

export function sendError(res: Response, kind: ErrorKind, message: string, details: string[]): void {
  const { status, body } = errorEnvelope(kind, message, details);
  res.locals.errorCode = body.error.code;
  // A 503 always says when to come back, so clients and load balancers retry instead of failing.
  sendJson(res, status, body, kind === 'unavailable' ? { 'Retry-After': '1' } : undefined);
}
