import { randomUUID } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';

const REQUEST_ID_PATTERN = /^[A-Za-z0-9._-]{1,64}$/;

/**
 * Gives every request an id (`res.locals.requestId`, the `X-Request-Id` response header), which the
 * logs and the audit trail record. A client's `X-Request-Id` is believed only from a proxy that
 * TRUST_PROXY names (it carries the id the edge gave the request); anyone else gets the server's own.
 */
export function requestIds(trustsPeer: (address: string, hop: number) => boolean) {
  return (req: Request, res: Response, next: NextFunction): void => {
    const given = req.get('x-request-id');
    const believed = given && REQUEST_ID_PATTERN.test(given) && trustsPeer(req.socket.remoteAddress ?? '', 0);
    res.locals.requestId = believed ? given : randomUUID();
    res.set('X-Request-Id', res.locals.requestId);
    next();
  };
}
