import type { NextFunction, Request, Response } from 'express';
import type { Logger } from '../logging/logger.js';
import { redactPath } from '../logging/redact-path.js';

/**
 * One line per request, written when its answer is finished: no query string; the calendar key
 * inside feed URLs and sign-in interaction ids are redacted. Its fields are strings and numbers the
 * line names itself (none of them a header or a credential field), so it skips the logger's
 * redaction, which otherwise runs on every field of every line.
 */
export function accessLogLines(logger: Logger) {
  const accessLog = logger.child({}, { redact: [] });
  return (req: Request, res: Response, next: NextFunction): void => {
    const started = process.hrtime.bigint();
    // Read now: inside a mounted router (`/graphql`) Express shows the path relative to the mount.
    const path = redactPath(req.path);
    res.on('finish', () => {
      accessLog.info({
        requestId: res.locals.requestId,
        method: req.method,
        path,
        status: res.statusCode,
        durationMs: Number((process.hrtime.bigint() - started) / 1000n) / 1000,
        traceId: res.locals.traceId,
      }, 'request');
    });
    next();
  };
}
