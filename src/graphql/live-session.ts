import type { EntityManager } from '@mikro-orm/sql';
import type { PubSub } from 'type-graphql';
import { InvalidInputError } from '../errors/domain-errors.js';
import type { Context } from './context.js';
import { LoaderRegistry } from './loaders.js';

/** A committed change, as every instance hears it (ids and kinds only: no values, never a secret). */
export interface LiveChange {
  accountId: string;
  action: string;
  resourceType: string;
  resourceId: string;
  userId?: string;
  /** Names of the changed fields; undefined when unknown (too many to send). */
  fields?: string[];
  revokesAccess: boolean;
}

/** What a subscription's event stream carries: a change, or `resync` (changes may have been missed meanwhile: read again). */
export type LiveMessage = { kind: 'change'; change: LiveChange } | { kind: 'resync' };

/** Why a credential stopped working. `access_changed` is never sent (kept for the deprecated enum value). */
export type AccessRevocationReason = 'credential_revoked' | 'credential_expired' | 'user_deleted' | 'user_suspended' | 'access_changed';

export interface ViewerAccessMessage {
  reason: AccessRevocationReason;
  occurredAt: Date;
}

/**
 * Set on the context of a GraphQL operation arriving over WebSocket (src/live-updates): where a
 * subscription resolver takes its events from. Streams end when the subscription does.
 */
export interface LiveSession {
  /** Changes of one user of the connection's account (`resync` after the instance may have missed some). */
  userEvents(userId: string): AsyncIterable<LiveMessage>;
  /**
   * Every change of the connection's account (`resync` likewise). Ending it (`return`) releases it
   * at once, even while a value is awaited: a subscription that wraps it can end it on unsubscribe.
   */
  accountEvents(): AsyncIterableIterator<LiveMessage>;
  /** The connection's credential stopped working; the connection closes (4403) right after. A change of its rights alone is not sent here. */
  viewerAccessEvents(): AsyncIterable<ViewerAccessMessage>;
}

export function requireLiveSession(context: Context): LiveSession {
  if (!context.live) throw new InvalidInputError('Subscriptions are served over WebSocket on /graphql (the graphql-ws protocol).');
  return context.live;
}

/**
 * A subscription's context lives as long as the subscription; each event is presented like a new
 * request: fresh loaders (no value cached from an earlier event), a clear identity map.
 */
export function freshEventScope(context: Context): void {
  context.loaders = new LoaderRegistry();
  const reset = lazyEntityManagers.get(context);
  if (reset) reset();
  else context.em = context.em.fork({ clear: true });
}

const lazyEntityManagers = new WeakMap<Context, () => void>();

/**
 * A subscription's context forks its EntityManager on first use only: a fork is the largest part
 * of an idle subscription's memory, and most events (every `viewerAccessRevoked`, a `userChanged`
 * not asking for `user`) never read the database. `freshEventScope` drops it again.
 */
export function withLazyEntityManager(context: Context, fork: () => EntityManager): Context {
  let em: EntityManager | undefined;
  Object.defineProperty(context, 'em', {
    enumerable: true,
    configurable: true,
    get: () => (em ??= fork()),
    set: (value: EntityManager) => {
      em = value;
    },
  });
  lazyEntityManagers.set(context, () => {
    em = undefined;
  });
  return context;
}

/**
 * type-graphql wants a process-wide PubSub for `@Subscription`s. Events here belong to an app
 * instance (its listening connection, its connections' credentials; tests run two in one process),
 * so every subscription declares `subscribe` and reads its stream from `context.live`; topic-based
 * subscriptions, which would bypass that, fail loudly.
 */
export const contextOnlyPubSub: PubSub = {
  publish(routingKey) {
    throw new Error(`publish(${routingKey}): live events come from the instance's listening connection, not from code`);
  },
  subscribe(routingKey) {
    throw new Error(`subscribe(${routingKey}): declare \`subscribe\` and read the stream from context.live (src/graphql/live-session.ts)`);
  },
};
