import type { NextFunction, Request, Response } from 'express';
import { authenticate } from '../auth/authenticate.js';
import { browserSessionOf } from '../auth/browser-session.js';
import { withConnectionShare } from '../db/connection-share.js';
import type { Database } from '../db/database.js';
import type { TransactionObserver } from '../db/transaction.js';
import { createContext } from '../graphql/context.js';
import type { Logger } from '../logging/logger.js';
import { faceOf } from './face.js';
import type { Runtime } from './runtime.js';

/**
 * Contention is a normal event, not a defect: retries are debug lines, and a write that gives up
 * (answered 503 busy) is a warning with the request id the client can quote.
 */
function transactionLog(logger: Logger, requestId: string): TransactionObserver {
  return {
    retrying: (event) => logger.debug({ requestId, ...event }, 'write transaction retried after a conflict'),
    gaveUp: (event) => logger.warn({ requestId, ...event }, 'write transaction gave up: answered busy'),
  };
}

/**
 * One context per request (`res.locals.context`), the same for every face: the credential
 * authenticated for the request's face, the entity manager (with the request's share of the pool), the write runner on behalf of the
 * request, the client's address and browser session.
 */
export function requestContext(deps: { database: Database; runtime: Runtime; logger: Logger; connectionsPerRequest: number }) {
  const { database, runtime, logger, connectionsPerRequest } = deps;
  return async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    try {
      const em = withConnectionShare(database.em(), connectionsPerRequest, database.poolTimeoutMs);
      const face = faceOf(res).name;
      const authentication = await authenticate(em, req.get('authorization'), runtime.credentialResolvers, face);
      // Authentication above read the primary; presenting reads after it may use a replica.
      database.readRouting?.attach(em, authentication.status === 'authenticated' ? authentication.principal.credentialId : undefined);
      const requestId = res.locals.requestId as string;
      // Derived from the socket and forwarding headers on each read: read once.
      const clientAddress = req.ip;
      const transactions = database.transactions.observedBy(transactionLog(logger, requestId)).onBehalfOf({
        face,
        principal: authentication.status === 'authenticated' ? authentication.principal : undefined,
        requestId,
        remoteAddress: clientAddress,
        description: `${req.method} ${req.path}`,
      });
      res.locals.context = createContext({ em, authentication, requestId, runtime, transactions, clientAddress: clientAddress ?? 'unknown', browserSession: browserSessionOf(req.get('cookie')) });
      next();
    } catch (error) {
      next(error);
    }
  };
}
