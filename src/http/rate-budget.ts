import type { NextFunction, Request, Response } from 'express';
import type { RateDecision, RateLimiter } from '../auth/rate-limit.js';
import { RateLimitedError } from '../errors/domain-errors.js';
import type { Context } from '../graphql/context.js';
import { rateLimitDecisions } from '../observability/metrics.js';
import { faceOf } from './face.js';

/**
 * Takes `points` (one unless an operation's cost says more) of `key`'s budget and records the
 * decision's metric: the one way every transport (HTTP and the WebSocket alike) draws on a budget.
 */
export async function drawBudget(rateLimiter: RateLimiter, key: string, points = 1): Promise<RateDecision> {
  const decision = await rateLimiter.consume(key, points);
  rateLimitDecisions.inc({ decision: decision.allowed ? 'allowed' : 'limited', store: decision.store });
  return decision;
}

/**
 * One request's draws on its budget: one point at the door, then the rest of its operation's cost
 * once the cost is known (GraphQL, over HTTP and WebSocket). `drawn` and `decision` say what the
 * request was charged and where the budget stood after it.
 */
export class RequestBudget {
  drawn = 1;

  constructor(
    private readonly rateLimiter: RateLimiter,
    readonly key: string,
    public decision: RateDecision,
  ) {}

  /**
   * Brings the request's charge up to `points`. When fewer remain, the request is refused (the
   * decision is not allowed) and the extra is given back: what it could not use is not spent,
   * and where the budget stands is what it was before.
   */
  async chargeUpTo(points: number): Promise<RateDecision> {
    const more = points - this.drawn;
    if (more <= 0) return this.decision;
    const decision = await drawBudget(this.rateLimiter, this.key, more);
    if (decision.allowed) {
      this.drawn = points;
      this.decision = decision;
      return decision;
    }
    await this.rateLimiter.refund(this.key, more);
    return { ...decision, remaining: this.decision.remaining };
  }
}

/** The `ratelimit-*` headers of a decision: where the budget stands after the request's charge. */
export function budgetHeaders(decision: RateDecision): Record<string, string> {
  return { 'ratelimit-limit': String(decision.limit), 'ratelimit-remaining': String(decision.remaining), 'ratelimit-reset': String(decision.resetSeconds) };
}

/** The budget key of a client address: requests without a valid credential, and routes outside the API. */
export const addressBudgetKey = (address: string | undefined) => `address:${address}`;

/** Every answer says where its budget stands, whichever budget it drew on. */
function reportBudget(res: Response, decision: RateDecision): void {
  res.set(budgetHeaders(decision));
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
 * Every API request draws one point of its credential's budget (a user's keys and tokens share
 * one); requests without a valid credential draw on their client address's. A GraphQL operation
 * then draws the rest of its cost (`Context.rateBudget`). Runs after the request context.
 */
export function limitPerCredential(rateLimiter: RateLimiter) {
  return async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    try {
      const context = res.locals.context as Context;
      const { authentication } = context;
      const key = authentication.status === 'authenticated' ? authentication.principal.rateLimitKey : addressBudgetKey(req.ip);
      const decision = await drawBudget(rateLimiter, key);
      reportBudget(res, decision);
      context.rateBudget = new RequestBudget(rateLimiter, key, decision);
      if (decision.allowed) return next();
      answerLimited(res, decision, `Rate limit of ${decision.limit} requests per minute exceeded; retry in ${decision.resetSeconds} seconds.`);
    } catch (error) {
      next(error);
    }
  };
}
