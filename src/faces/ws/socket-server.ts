import { randomUUID } from 'node:crypto';
import type http from 'node:http';
import { createSourceEventStream, execute, GraphQLError, type ExecutionArgs, type ExecutionResult, type GraphQLSchema } from 'graphql';
import { makeServer, type ConnectionInitMessage, type ServerOptions } from 'graphql-ws';
import type { RateLimiter } from '../../auth/rate-limit.js';
import type { LiveUpdateLimits } from '../../config/config.js';
import type { Database } from '../../db/database.js';
import type { NotificationListener } from '../../db/notification-listener.js';
import { InvalidInputError, RateLimitedError } from '../../errors/domain-errors.js';
import { createContext, requirePrincipal, type Context } from '../../graphql/context.js';
import { withLazyEntityManager, type LiveMessage } from '../../graphql/live-session.js';
import type { QueryLimits } from '../../graphql/limits.js';
import { drawBudget, RequestBudget } from '../../http/rate-budget.js';
import { ratePointsOf } from '../../graphql/cost.js';
import type { Runtime } from '../../http/runtime.js';
import type { TrustedDocuments } from '../../http/trusted-documents.js';
import { EventStream } from '../../live-updates/event-stream.js';
import { GroupedSubscription, payloadKey, rightsKey } from '../../live-updates/grouped-delivery.js';
import { decodeLiveChanges, LIVE_CHANNEL } from '../../live-updates/live-change.codec.js';
import { LiveConnection, LiveHub } from '../../live-updates/live-hub.js';
import type { Logger } from '../../logging/logger.js';
import { liveConnections, liveEventsDropped, liveEventsSent, liveSubscriptions } from '../../observability/metrics.js';
import { GRAPHQL_PATH } from '../graphql/graphql-face.js';
import { admitConnection } from './connection-admission.js';
import { subscribeChecks } from './subscribe-checks.js';
import { asGraphQLErrors, executedEach, formatted, nextPayload, refusalOf } from './subscription-runs.js';
import { serveSocket, takeUpgrades, type SocketExtra } from './socket-transport.js';

export const DEFAULT_LIVE_LIMITS: LiveUpdateLimits = {
  maxConnectionsPerCredential: 10,
  maxSubscriptionsPerConnection: 20,
  maxBufferedBytes: 262_144,
  keepAliveMs: 12_000,
};

/** A `connection_init` must arrive within this long after the upgrade. */
const CONNECTION_INIT_TIMEOUT_MS = 5_000;

export interface LiveUpdatesOptions {
  httpServer: http.Server;
  schema: GraphQLSchema;
  database: Database;
  runtime: Runtime;
  rateLimiter: RateLimiter;
  logger: Logger;
  limits: LiveUpdateLimits;
  queryLimits: QueryLimits;
  /** `GRAPHQL_TRUSTED_DOCUMENTS`: subscriptions, like POST /graphql, run only the manifest's operations. */
  trustedDocuments?: TrustedDocuments;
  /** Introspection is off: validation errors name nothing of the schema ("Did you mean ...?"), as on HTTP. */
  hideSchemaDetails?: boolean;
  /**
   * The client's address as HTTP requests have it (Express's `req.ip` under `TRUST_PROXY`), for the
   * address budget and the audit trail; without it, the peer's address.
   */
  clientAddressOf?: (request: http.IncomingMessage) => string | undefined;
}

export interface LiveUpdates {
  hub: LiveHub;
  /** From now on upgrades are refused (503): clients reconnect to another instance. */
  beginDraining(): void;
  /** Closes every socket with 1001 and the listening connection. */
  close(): Promise<void>;
}

interface Extra extends SocketExtra {
  connection?: LiveConnection;
  subscriptions: Set<string>;
  /** The root field of each subscription, the label of its sent events. */
  fields: Map<string, string>;
}

function authorizationOf(params: Readonly<Record<string, unknown>> | undefined): string | undefined {
  const value = params?.authorization ?? params?.Authorization;
  return typeof value === 'string' ? value : undefined;
}

/** What a subscription's events need to be grouped: set by onSubscribe on its context, taken by `subscribe`. */
interface SubscriptionOrigin {
  connection: LiveConnection;
  id: string;
  field: string;
  payload: Parameters<NonNullable<ServerOptions['onSubscribe']>>[2];
  remoteAddress: string | undefined;
}

/** Feeds the hub from the instance's one listening connection (LISTEN on `live_changes`). */
function listenForChanges(database: Database, hub: LiveHub, logger: Logger): Promise<NotificationListener> {
  return database.listen(LIVE_CHANNEL, {
    notification(payload) {
      // Every instance hears every commit's changes; one nobody is subscribed to drops them unread (and so does not count undecodable ones).
      if (hub.idle) return;
      const { changes, malformed } = decodeLiveChanges(payload);
      if (malformed) liveEventsDropped.inc({ reason: 'undecodable' }, malformed);
      hub.publish(changes);
    },
    reconnected() {
      logger.info('live updates: listening connection restored; subscribers told to resync');
      hub.resync();
    },
    lost(error) {
      logger.warn({ err: error }, 'live updates: listening connection lost; reconnecting');
    },
  });
}

/**
 * GraphQL subscriptions over WebSocket (the graphql-ws protocol) on the HTTP server's `/graphql`,
 * against the same schema, auth checker and limits as POST /graphql; events from the instance's
 * one listening connection (LISTEN on `live_changes`), which every instance's commits notify.
 */
export async function startLiveUpdates(options: LiveUpdatesOptions): Promise<LiveUpdates> {
  const { database, runtime, logger, limits } = options;
  const presentEvent = async (args: ExecutionArgs, message: LiveMessage) => JSON.stringify(nextPayload(await execute({ ...args, rootValue: message })));
  const hub = new LiveHub(database, runtime.credentialResolvers, logger, presentEvent);
  const listener = await listenForChanges(database, hub, logger);
  const server = makeServer<ConnectionInitMessage['payload'], Extra>(subscriptionProtocol(options, hub));
  const upgrades = takeUpgrades(options.httpServer, GRAPHQL_PATH, (socket, request, transport) =>
    serveSocket(server, socket, request, transport, { logger, maxBufferedBytes: limits.maxBufferedBytes, keepAliveMs: limits.keepAliveMs, clientAddressOf: options.clientAddressOf }, (base) => ({ ...base, subscriptions: new Set(), fields: new Map() })),
  );
  return {
    hub,
    beginDraining: () => upgrades.beginDraining(),
    async close() {
      await upgrades.close(() => hub.closeAll(1001, 'Going away'));
      await listener.close();
    },
  };
}

/** The graphql-ws server's hooks: admission at `connection_init`, the checks of each subscribe, and the grouped fan-out. */
function subscriptionProtocol(options: LiveUpdatesOptions, hub: LiveHub): ServerOptions<ConnectionInitMessage['payload'], Extra> {
  const { schema, database, runtime, rateLimiter, logger, limits } = options;
  const origins = new WeakMap<object, SubscriptionOrigin>();
  const checkSubscribe = subscribeChecks(options);
  const subscriptionContext = subscriptionContexts(database, runtime, hub);
  return {
    schema,
    connectionInitWaitTimeout: CONNECTION_INIT_TIMEOUT_MS,
    async subscribe(args) {
      const origin = origins.get(args.contextValue as object);
      origins.delete(args.contextValue as object);
      return origin ? subscribeGrouped(args, origin, hub, subscriptionContext, logger) : subscribeAlone(args);
    },
    async onConnect(ctx) {
      const { socket, clientAddress } = ctx.extra;
      const authorization = authorizationOf(ctx.connectionParams);
      const principal = await admitConnection(socket, authorization, clientAddress, {
        database, credentialResolvers: runtime.credentialResolvers, rateLimiter, logger,
        maxConnectionsPerCredential: limits.maxConnectionsPerCredential, connectionsOf: (credentialId) => hub.connectionsOf(credentialId),
      });
      if (!principal) return false;
      const connection = new LiveConnection(randomUUID(), ctx.extra.liveSocket, authorization!, principal);
      ctx.extra.connection = connection;
      hub.add(connection, principal.expiresAt);
      liveConnections.inc();
      return true;
    },
    async onSubscribe(ctx, id, payload) {
      const { connection, subscriptions } = ctx.extra;
      if (!connection || connection.revoked) return asGraphQLErrors(new GraphQLError('The connection\'s access was revoked.', { extensions: { code: 'UNAUTHENTICATED' } }));
      // graphql-ws registers the operation before this hook runs (synchronously, as messages arrive), so this counts it too.
      if (Object.keys(ctx.subscriptions).length > limits.maxSubscriptionsPerConnection) {
        return asGraphQLErrors(new InvalidInputError(`At most ${limits.maxSubscriptionsPerConnection} subscriptions per connection; complete one first.`));
      }
      const key = connection.principal.rateLimitKey;
      const door = await drawBudget(rateLimiter, key);
      if (!door.allowed) return asGraphQLErrors(new RateLimitedError(door.resetSeconds));
      const checked = checkSubscribe(payload);
      if ('refused' in checked) return [...checked.refused];
      // As over HTTP: the subscription draws its cost, refused (and not spent) when more than remains.
      const points = ratePointsOf(checked.cost);
      const charged = await new RequestBudget(rateLimiter, key, door).chargeUpTo(points);
      if (!charged.allowed) return asGraphQLErrors(new RateLimitedError(charged.resetSeconds, `This subscription costs ${points} points of the rate budget and ${charged.remaining} remain; retry in ${charged.resetSeconds} seconds.`));
      const remoteAddress = ctx.extra.clientAddress;
      const contextValue = subscriptionContext(connection, `${connection.id}/${id}`, remoteAddress);
      subscriptions.add(id);
      const root = checked.operation.selectionSet.selections[0];
      // A bounded label: the schema's subscription fields (validation refused any other name).
      const field = root?.kind === 'Field' ? root.name.value : 'unknown';
      ctx.extra.fields.set(id, field);
      origins.set(contextValue, { connection, id, field, payload, remoteAddress });
      liveSubscriptions.inc();
      return { schema, document: checked.document, operationName: payload.operationName, variableValues: payload.variables ?? undefined, contextValue };
    },
    onNext(ctx, id, _payload, _args, result: ExecutionResult) {
      liveEventsSent.inc({ field: ctx.extra.fields.get(id) ?? 'unknown' });
      return result.errors ? nextPayload(result) : undefined;
    },
    onError(_ctx, _id, _payload, errors) {
      return formatted(errors);
    },
    onComplete(ctx, id, payload) {
      ctx.extra.fields.delete(id);
      // An id may be reused once completed: only this subscription's registration goes.
      if (ctx.extra.connection?.subscriptions.get(id)?.origin === payload) ctx.extra.connection.subscriptions.delete(id);
      if (ctx.extra.subscriptions.delete(id)) liveSubscriptions.dec();
    },
    onClose(ctx) {
      liveSubscriptions.dec(ctx.extra.subscriptions.size);
      ctx.extra.subscriptions.clear();
      const { connection } = ctx.extra;
      if (connection) {
        hub.remove(connection);
        liveConnections.dec();
      }
    },
  };
}

type SubscriptionContexts = (connection: LiveConnection, requestId: string, remoteAddress: string | undefined) => Context;

/**
 * A subscription's context. It acts as the connection's principal as it is now, not as it was at
 * subscribe: when the connection's rights change (`LiveConnection.changeRights`), every event is
 * executed, and every field authorized, with the new ones. Subscriptions write nothing.
 */
function subscriptionContexts(database: Database, runtime: Runtime, hub: LiveHub): SubscriptionContexts {
  return (connection, requestId, remoteAddress) => {
    const context = withLazyEntityManager(createContext({
      em: undefined as unknown as Context['em'],
      authentication: { status: 'authenticated', principal: connection.principal },
      requestId,
      runtime,
      transactions: database.transactions.onBehalfOf({ face: 'graphql', principal: connection.principal, requestId, remoteAddress, description: 'subscription' }),
      live: hub.session(connection),
      clientAddress: remoteAddress,
    }), () => database.em());
    Object.defineProperty(context, 'authentication', { enumerable: true, get: (): Context['authentication'] => ({ status: 'authenticated', principal: connection.principal }) });
    return context;
  };
}

/** A subscription that did not come through onSubscribe: executed per event, as graphql-js' `subscribe` does. */
async function subscribeAlone(args: ExecutionArgs) {
  const source = await createSourceEventStream(args);
  if (!(Symbol.asyncIterator in source)) return source;
  return executedEach(source[Symbol.asyncIterator](), args);
}

/**
 * As graphql-js' `subscribe`, except that a subscription reading one of the hub's topic streams
 * is handed to the topic's fan-out: its events are executed once per group of subscriptions with
 * the same document, variables and rights, and sent by the fan-out, not by graphql-ws.
 */
async function subscribeGrouped(args: ExecutionArgs, origin: SubscriptionOrigin, hub: LiveHub, subscriptionContext: SubscriptionContexts, logger: Logger) {
  const rightsAtStart = rightsKey(origin.connection.principal);
  const source = await createSourceEventStream(args);
  if (!(Symbol.asyncIterator in source)) return source;
  const { connection, id, field, payload } = origin;
  // The principal the subscription executes as (its context's, the connection's), whose rights decide what it is sent.
  const keyNow = () => payloadKey(payload.query, payload.operationName, payload.variables, requirePrincipal(args.contextValue as Context));
  let subscription: GroupedSubscription | ReturnType<typeof executedEach> | undefined;
  if (source instanceof EventStream) {
    const grouped = new GroupedSubscription(connection, id, field, keyNow(), args, source as EventStream<LiveMessage>, hub.lastSequence);
    if (hub.deliverGrouped(grouped)) subscription = grouped;
  }
  const served = subscription ?? executedEach(source[Symbol.asyncIterator](), args);
  const reauthorize = async () => {
    if (served instanceof GroupedSubscription) served.key = keyNow();
    // The check subscribe passed (the field's row of the access table, then its resolver's own), in a context of its own.
    const refusal = await refusalOf({ ...args, contextValue: subscriptionContext(connection, `${connection.id}/${id}`, origin.remoteAddress) });
    if (refusal !== undefined) served.fail(refusal);
  };
  connection.subscriptions.set(id, { origin: payload, reauthorize });
  // Rights changed while subscribe ran: the change's re-check may have missed it.
  if (rightsKey(connection.principal) !== rightsAtStart) void reauthorize().catch((error: unknown) => logger.error({ err: error }, 'live updates: re-authorizing a subscription failed'));
  return served;
}
