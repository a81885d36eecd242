import type { EntityManager } from '@mikro-orm/sql';
import type { RequestBudget } from '../http/rate-budget.js';
import type { Runtime } from '../http/runtime.js';
import type { Authentication } from '../auth/authenticate.js';
import type { Principal } from '../auth/principal.js';
import type { TransactionRunner } from '../db/transaction.js';
import { AuthenticationError } from '../errors/domain-errors.js';
import { BeforeAnswer } from './before-answer.js';
import { LoaderRegistry } from './loaders.js';
import type { LiveSession } from './live-session.js';

/** One per request, the same for a GraphQL request and for a REST route executing its operation. */
export interface Context {
  em: EntityManager;
  authentication: Authentication;
  requestId: string;
  runtime: Runtime;
  loaders: LoaderRegistry;
  /** Runs the request's writes (lock timeout, bounded retries); reports to the log with the request id. */
  transactions: TransactionRunner;
  /** The client's address as Express derives it (`TRUST_PROXY`), for limits keyed by address. */
  clientAddress: string;
  /** The value of the browser's sign-in session cookie, if it sent one (only to tell its own session apart). */
  browserSession?: string;
  /** Only on operations over WebSocket: the connection's event streams for subscriptions. */
  live?: LiveSession;
  /**
   * Only on requests over HTTP: work run once the operation has executed, before its answer is sent.
   * A subscription has none: each of its events is sent as soon as it is executed.
   */
  beforeAnswer?: BeforeAnswer;
  /** Over HTTP: the request's draws on its rate budget; an operation draws its cost once it is known. */
  rateBudget?: RequestBudget;
}

export function createContext(options: { em: EntityManager; authentication: Authentication; requestId: string; runtime: Runtime; transactions: TransactionRunner; clientAddress?: string; browserSession?: string; live?: LiveSession }): Context {
  return { ...options, clientAddress: options.clientAddress ?? 'unknown', loaders: new LoaderRegistry(), ...(options.live ? {} : { beforeAnswer: new BeforeAnswer() }) };
}

export function requirePrincipal(context: Context): Principal {
  const { authentication } = context;
  if (authentication.status === 'authenticated') return authentication.principal;
  if (authentication.status === 'rejected') throw authentication.error;
  throw new AuthenticationError();
}
