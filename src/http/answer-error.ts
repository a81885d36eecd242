import type { NextFunction, Request, Response } from 'express';
import { DomainError } from '../errors/domain-errors.js';
import { classifyError } from '../graphql/errors.js';
import type { Logger } from '../logging/logger.js';
import { redactPath } from '../logging/redact-path.js';
import type { ThrottledWarning } from '../logging/throttled-log.js';
import { faceOf } from './face.js';
import { rejectionError } from './hostile-requests.js';

/** Where failures are reported: defects at error level, outages of a dependency as throttled warnings. */
export interface FailureLog {
  logger: Logger;
  outages: ThrottledWarning;
}

/**
 * Logs a failure an answer is about to report: an internal error (its cause never reaches the
 * client) at error level, a dependency that is away once per interval at warn level; anything
 * else is the client's and not logged. The one place every face reports what it answers; `cause`
 * is what the line shows when `error` wraps it.
 */
export function reportFailure(log: FailureLog, error: unknown, where: Record<string, unknown>, cause: unknown = error): void {
  const { kind } = classifyError(error);
  if (kind === 'internal') log.logger.error({ err: cause, ...where }, 'unhandled error');
  else if (kind === 'unavailable') log.outages.warn({ err: cause, ...where }, 'database unavailable: answering 503');
}

/** Answers `error` in the format of the request's face, and reports it (see `reportFailure`). */
export function answerError(res: Response, error: unknown, log: FailureLog, where: Record<string, unknown> = {}): void {
  reportFailure(log, error, { requestId: res.locals.requestId, ...where });
  faceOf(res).answer(res, error);
}

/**
 * The last error handler: errors outside a route's own handling (body parsing, path decoding,
 * authentication's and the rate budget's database reads), answered in the shape of the request's
 * face. A refusal of the request itself is the client's (its 4xx, our words, never the parser's).
 */
export function lastErrorHandler(log: FailureLog) {
  return (error: unknown, req: Request, res: Response, _next: NextFunction): void => {
    answerError(res, rejectionError(error) ?? error, log, { path: redactPath(req.originalUrl) });
  };
}

/** A path no route serves, answered in the shape of the request's face. */
export function noSuchRoute(_req: Request, res: Response): void {
  faceOf(res).answer(res, new DomainError('not_found', 'Not Found', ['No such route.']));
}
