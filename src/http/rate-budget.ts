import type { NextFunction, Request, Response } from 'express';
import type { RateDecision, RateLimiter } from '../auth/rate-limit.js';
import { RateLimitedError } from '../errors/domain-errors.js';
import type { Context } from '../graphql/context.js';
import { rateLimitDecisions } from '../observability/metrics.js';
import { faceOf } from './face.js';

/**
 * Takes one token of `key`'s budget and records the decision's metric: the one way every
 * transport (HTTP and the WebSocket alike) draws on a budget.
 */
export async function drawBudget(rateLimiter: RateLimiter, key: string): Promise<RateDecision> {
  const decision = await rateLimiter.consume(key);
  rateLimitDecisions.inc({ decision: decision.allowed ? 'allowed' : 'limited', store: decision.store });
  return decision;
}

/** The budget key of a client address: requests without a valid credential, and routes outside the API. */
export const addressBudgetKey = (address: string | undefined) => `address:${address}`;

/** Every answer says where its budget stands, whichever budget it drew on. */
function reportBudget(res: Response, decision: RateDecision): void {
  res.set({ 'ratelimit-limit': String(decision.limit), 'ratelimit-remaining': String(decision.remaining), 'ratelimit-reset': String(decision.resetSeconds) });
}

function answerLimited(res: Response, decision: RateDecision, detail: string): void {
  res.set('Retry-After', String(decision.resetSeconds));
  faceOf(res).answer(res, new RateLimitedError(decision.resetSeconds, detail));
}

/**
 * For routes outside the API (sign-in pages, the iCal feed, revocation by possession): no
 * credential is read, some write (a sign-in starts a row), so each client address has the anonymous budget.
 */
export function limitPerAddress(rateLimiter: RateLimiter) {
  return async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    try {
      const decision = await drawBudget(rateLimiter, addressBudgetKey(req.ip));
      reportBudget(res, decision);
      if (decision.allowed) return next();
      answerLimited(res, decision, `Rate limit of ${decision.limit} requests per minute from this address exceeded; retry in ${decision.resetSeconds} seconds.`);
    } catch (error) {
      next(error);
    }
  };
}

/**
 * Every API request draws on its credential's budget (a user's keys and tokens share one);
 * requests without a valid credential draw on their client address's. Runs after the request context.
 */
export function limitPerCredential(rateLimiter: RateLimiter) {
  return async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    try {
      const { authentication } = res.locals.context as Context;
      const key = authentication.status === 'authenticated' ? authentication.principal.rateLimitKey : addressBudgetKey(req.ip);
      const decision = await drawBudget(rateLimiter, key);
      reportBudget(res, decision);
      if (decision.allowed) return next();
      answerLimited(res, decision, `Rate limit of ${decision.limit} requests per minute exceeded; retry in ${decision.resetSeconds} seconds.`);
    } catch (error) {
      next(error);
    }
  };
}
