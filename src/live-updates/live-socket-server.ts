import { randomUUID } from 'node:crypto';
import type http from 'node:http';
import type { Duplex } from 'node:stream';
import { createSourceEventStream, execute, getOperationAST, GraphQLError, parse, specifiedRules, validate, type DocumentNode, type ExecutionArgs, type ExecutionResult, type FormattedExecutionResult, type GraphQLSchema } from 'graphql';
import { makeServer, handleProtocols, type ConnectionInitMessage, type SubscribePayload } from 'graphql-ws';
import { WebSocketServer, type WebSocket } from 'ws';
import type { Runtime } from '../app/runtime.js';
import { authenticate } from '../auth/authenticate.js';
import type { RateLimiter } from '../auth/rate-limit.js';
import type { LiveUpdateLimits } from '../config/config.js';
import type { Database } from '../db/database.js';
import { isDatabaseUnavailable } from '../db/database-errors.js';
import type { NotificationListener } from '../db/notification-listener.js';
import { InvalidInputError, RateLimitedError } from '../errors/domain-errors.js';
import { createContext, requirePrincipal, type Context } from '../graphql/context.js';
import { formatGraphQLError, withoutSuggestions } from '../graphql/errors.js';
import { trustedBody, UNTRUSTED_DOCUMENT, type TrustedDocuments } from '../app/trusted-documents.js';
import { withLazyEntityManager, type LiveMessage } from '../graphql/live-session.js';
import { assertOperationInputsAcceptable, inputProblemsAsGraphQLError } from '../graphql/input-bounds.js';
import { GRAPHQL_MAX_TOKENS, documentShapeProblem, queryLimitRules, type QueryLimits } from '../graphql/limits.js';
import { assertOperationCostWithin } from '../graphql/cost.js';
import type { Logger } from '../logging/logger.js';
import { liveConnections, liveEventsDropped, liveEventsSent, liveSubscriptions, rateLimitDecisions } from '../observability/metrics.js';
import { decodeLiveChanges, LIVE_CHANNEL } from './live-change.codec.js';
import { EventStream } from './event-stream.js';
import { GroupedSubscription, payloadKey, rightsKey } from './grouped-delivery.js';
import { LiveConnection, LiveHub, type LiveConnectionSocket } from './live-hub.js';

export const DEFAULT_LIVE_LIMITS: LiveUpdateLimits = {
  maxConnectionsPerCredential: 10,
  maxSubscriptionsPerConnection: 20,
  maxBufferedBytes: 262_144,
  keepAliveMs: 12_000,
};

/** Close codes of the graphql-ws protocol family this server uses (besides 1001 going away and 4403 access revoked). */
const CLOSE_UNAUTHORIZED = 4401;
const CLOSE_FORBIDDEN = 4403;
const CLOSE_TOO_MANY = 4429;
const CLOSE_INTERNAL = 4500;
/** WebSocket's "Try Again Later": the database is away (a failover's gap), the connection may be opened again shortly. */
const CLOSE_TRY_AGAIN_LATER = 1013;
/** A `connection_init` must arrive within this long after the upgrade. */
const CONNECTION_INIT_TIMEOUT_MS = 5_000;
/** A client message larger than this (a subscribe document is at most 5,000 tokens) closes the socket. */
const MAX_CLIENT_MESSAGE_BYTES = 256 * 1024;
/** After the 1001 close frame, a client that does not answer is cut after this long. */
const CLOSE_HANDSHAKE_MS = 1_000;

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

interface Extra {
  socket: WebSocket;
  /** What the hub sends through and closes. */
  liveSocket: LiveConnectionSocket;
  request: http.IncomingMessage;
  /** Derived once, at the upgrade: see `LiveUpdatesOptions.clientAddressOf`. */
  clientAddress: string | undefined;
  connection?: LiveConnection;
  subscriptions: Set<string>;
  /** The root field of each subscription, the label of its sent events. */
  fields: Map<string, string>;
}

function authorizationOf(params: Readonly<Record<string, unknown>> | undefined): string | undefined {
  const value = params?.authorization ?? params?.Authorization;
  return typeof value === 'string' ? value : undefined;
}

function pathOf(url: string | undefined): string {
  return (url ?? '').split('?')[0]!;
}

function refuseUpgrade(socket: Duplex, status: number, text: string): void {
  socket.end(`HTTP/1.1 ${status} ${text}\r\nConnection: close\r\nContent-Type: text/plain\r\nContent-Length: ${Buffer.byteLength(text)}\r\n\r\n${text}`);
}

/** Errors answered to a subscribe message, formatted as on POST /graphql. */
function asGraphQLErrors(error: Error): GraphQLError[] {
  return [error instanceof GraphQLError ? error : new GraphQLError(error.message, { originalError: error })];
}

function formatted(errors: readonly GraphQLError[]) {
  return errors.map((error) => formatGraphQLError(error.toJSON(), error));
}

/** A `next` message's payload, as graphql-ws sends it after `onNext` (errors formatted as on POST /graphql). */
function nextPayload(result: ExecutionResult): FormattedExecutionResult {
  return result.errors ? { ...result, errors: formatted(result.errors) } : (result as FormattedExecutionResult);
}

/** What a subscription's events need to be grouped: set by onSubscribe on its context, taken by `subscribe`. */
interface SubscriptionOrigin {
  connection: LiveConnection;
  id: string;
  field: string;
  payload: SubscribePayload;
  remoteAddress: string | undefined;
}

/**
 * A subscription whose events are not grouped (its resolver builds its own stream): each event is
 * executed for it alone, as graphql-js' `subscribe` does. Ending it ends its source at once;
 * `fail` ends it with an error (graphql-ws sends it as the subscription's `error` message).
 */
function executedEach(source: AsyncIterator<unknown>, args: ExecutionArgs): AsyncIterableIterator<ExecutionResult> & { fail(error: unknown): void } {
  let failure: { error: unknown } | undefined;
  const finish = async (): Promise<IteratorResult<ExecutionResult>> => {
    await source.return?.();
    return { value: undefined, done: true };
  };
  return {
    async next() {
      const event = await source.next();
      if (failure) throw failure.error;
      if (event.done) return { value: undefined, done: true };
      try {
        return { value: await execute({ ...args, rootValue: event.value }), done: false };
      } catch (error) {
        await source.return?.();
        throw error;
      }
    },
    return: finish,
    async throw(error: unknown) {
      await finish();
      throw error;
    },
    fail(error: unknown) {
      failure ??= { error };
      void source.return?.();
    },
    [Symbol.asyncIterator]() {
      return this;
    },
  };
}

/** What a subscription's authorization answers: nothing when allowed, else the refusal (the domain error where there is one). */
async function refusalOf(args: ExecutionArgs): Promise<unknown> {
  const source = await createSourceEventStream(args);
  if (Symbol.asyncIterator in source) {
    // Allowed: the stream the check opened is not the subscription's; it is released at once.
    await source[Symbol.asyncIterator]().return?.();
    return undefined;
  }
  const refusal = source.errors?.[0];
  return refusal ? (refusal.originalError ?? refusal) : undefined;
}

/**
 * GraphQL subscriptions over WebSocket (the graphql-ws protocol) on the HTTP server's `/graphql`,
 * against the same schema, auth checker and limits as POST /graphql; events from the instance's
 * one listening connection (LISTEN on `live_changes`), which every instance's commits notify.
 */
export async function startLiveUpdates(options: LiveUpdatesOptions): Promise<LiveUpdates> {
  const { httpServer, schema, database, runtime, rateLimiter, logger, limits } = options;
  const presentEvent = async (args: ExecutionArgs, message: LiveMessage) => JSON.stringify(nextPayload(await execute({ ...args, rootValue: message })));
  const hub = new LiveHub(database, runtime.credentialResolvers, logger, presentEvent);
  const origins = new WeakMap<object, SubscriptionOrigin>();
  const validationRules = [...specifiedRules, ...queryLimitRules(options.queryLimits)];
  let draining = false;

  /**
   * A subscription's context. It acts as the connection's principal as it is now, not as it was at
   * subscribe: when the connection's rights change (`LiveConnection.changeRights`), every event is
   * executed, and every field authorized, with the new ones. Subscriptions write nothing.
   */
  const subscriptionContext = (connection: LiveConnection, requestId: string, remoteAddress: string | undefined): Context => {
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

  const listener: NotificationListener = await database.listen(LIVE_CHANNEL, {
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

  const consume = async (key: string): Promise<boolean> => {
    const decision = await rateLimiter.consume(key);
    rateLimitDecisions.inc({ decision: decision.allowed ? 'allowed' : 'limited', store: decision.store });
    return decision.allowed;
  };

  const server = makeServer<ConnectionInitMessage['payload'], Extra>({
    schema,
    connectionInitWaitTimeout: CONNECTION_INIT_TIMEOUT_MS,
    /**
     * As graphql-js' `subscribe`, except that a subscription reading one of the hub's topic streams
     * is handed to the topic's fan-out: its events are executed once per group of subscriptions with
     * the same document, variables and rights, and sent by the fan-out, not by graphql-ws.
     */
    async subscribe(args) {
      const origin = origins.get(args.contextValue as object);
      origins.delete(args.contextValue as object);
      const rightsAtStart = origin && rightsKey(origin.connection.principal);
      const source = await createSourceEventStream(args);
      if (!(Symbol.asyncIterator in source)) return source;
      if (!origin) return executedEach(source[Symbol.asyncIterator](), args);
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
        // The check subscribe passed (the field's @Authorized through the one auth checker, then its resolver's own), in a context of its own.
        const refusal = await refusalOf({ ...args, contextValue: subscriptionContext(connection, `${connection.id}/${id}`, origin.remoteAddress) });
        if (refusal !== undefined) served.fail(refusal);
      };
      connection.subscriptions.set(id, { origin: payload, reauthorize });
      // Rights changed while subscribe ran: the change's re-check may have missed it.
      if (rightsKey(connection.principal) !== rightsAtStart) void reauthorize().catch((error: unknown) => logger.error({ err: error }, 'live updates: re-authorizing a subscription failed'));
      return served;
    },
    async onConnect(ctx) {
      const { socket } = ctx.extra;
      const authorization = authorizationOf(ctx.connectionParams);
      let authentication: Awaited<ReturnType<typeof authenticate>>;
      try {
        authentication = await authenticate(database.em(), authorization, runtime.credentialResolvers, 'websocket');
      } catch (error) {
        if (!isDatabaseUnavailable(error)) throw error;
        // The socket's 503: nothing was decided about the credential, the client retries.
        logger.debug({ err: error }, 'live updates: connection_init met an unavailable database');
        socket.close(CLOSE_TRY_AGAIN_LATER, 'Service Unavailable: retry shortly');
        return false;
      }
      if (authentication.status === 'rejected' && authentication.wrongFace) {
        // A valid credential of another face (a provisioning token): forbidden here, not unknown.
        socket.close(CLOSE_FORBIDDEN, 'Forbidden: this credential is not valid on this face');
        return false;
      }
      if (authentication.status !== 'authenticated') {
        // As over HTTP, a request without a valid credential draws on its client address's budget (guessing tokens costs the same here), and past it is told so.
        if (!(await consume(`address:${ctx.extra.clientAddress}`))) {
          socket.close(CLOSE_TOO_MANY, 'Rate limit exceeded');
          return false;
        }
        socket.close(CLOSE_UNAUTHORIZED, authentication.status === 'anonymous' ? 'Unauthorized: connection_init must carry an authorization' : 'Unauthorized: the credential is unknown, revoked or expired');
        return false;
      }
      const { principal } = authentication;
      if (!(await consume(principal.rateLimitKey))) {
        socket.close(CLOSE_TOO_MANY, 'Rate limit exceeded');
        return false;
      }
      if (hub.connectionsOf(principal.credentialId) >= limits.maxConnectionsPerCredential) {
        socket.close(CLOSE_TOO_MANY, `Too many connections for this credential (at most ${limits.maxConnectionsPerCredential})`);
        return false;
      }
      if (socket.readyState !== socket.OPEN) return false;
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
      if (!(await consume(connection.principal.rateLimitKey))) return asGraphQLErrors(new RateLimitedError(60));
      if (options.trustedDocuments) {
        // The same rule as POST /graphql, before anything parses the document; named by id or hash, the listed text is the document.
        const listed = trustedBody(options.trustedDocuments, payload.query || undefined, payload.extensions);
        if (listed === undefined) return asGraphQLErrors(new GraphQLError(UNTRUSTED_DOCUMENT, { extensions: { code: 'PERSISTED_QUERY_NOT_FOUND' } }));
        // In place: the payload is what the subscription is grouped by and completed as (onComplete).
        (payload as { query: string }).query = listed;
      }
      const shape = documentShapeProblem(payload.query);
      if (shape) return asGraphQLErrors(new InvalidInputError(shape));
      let document: DocumentNode;
      try {
        document = parse(payload.query, { maxTokens: GRAPHQL_MAX_TOKENS });
      } catch (error) {
        return asGraphQLErrors(error as Error);
      }
      const invalid = validate(schema, document, validationRules);
      if (invalid.length) return options.hideSchemaDetails ? withoutSuggestions(invalid) : invalid;
      const operation = getOperationAST(document, payload.operationName);
      if (!operation) return asGraphQLErrors(new InvalidInputError('Name the operation to run (operationName).'));
      if (operation.operation !== 'subscription') {
        return asGraphQLErrors(new InvalidInputError('Only subscriptions are served over WebSocket; send queries and mutations with POST /graphql.'));
      }
      try {
        assertOperationInputsAcceptable(schema, document, payload.operationName, payload.variables);
        assertOperationCostWithin(options.queryLimits.maxCost, schema, document, payload.operationName, payload.variables);
      } catch (error) {
        if (error instanceof InvalidInputError) return [inputProblemsAsGraphQLError(error)];
        if (error instanceof GraphQLError) return [error];
        throw error;
      }
      const remoteAddress = ctx.extra.clientAddress;
      const contextValue = subscriptionContext(connection, `${connection.id}/${id}`, remoteAddress);
      subscriptions.add(id);
      const root = operation.selectionSet.selections[0];
      // A bounded label: the schema's subscription fields (validation refused any other name).
      const field = root?.kind === 'Field' ? root.name.value : 'unknown';
      ctx.extra.fields.set(id, field);
      origins.set(contextValue, { connection, id, field, payload, remoteAddress });
      liveSubscriptions.inc();
      return { schema, document, operationName: payload.operationName, variableValues: payload.variables ?? undefined, contextValue };
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
  });

  const sockets = new WebSocketServer({ noServer: true, maxPayload: MAX_CLIENT_MESSAGE_BYTES, handleProtocols: (protocols) => handleProtocols(protocols) });

  const opened = (socket: WebSocket, request: http.IncomingMessage, transport: Duplex) => {
    // A client that stops reading: what we send piles up in the socket's buffer. Past the bound
    // the connection is cut (its events are dropped), so its memory is bounded by the bound.
    const overBuffer = () => {
      if (socket.bufferedAmount <= limits.maxBufferedBytes) return false;
      liveEventsDropped.inc({ reason: 'slow_client' });
      socket.terminate();
      return true;
    };
    let pongWaited = false;
    const keepAlive = setInterval(() => {
      if (pongWaited) return socket.terminate();
      pongWaited = true;
      socket.ping();
    }, limits.keepAliveMs);
    keepAlive.unref();
    socket.on('pong', () => {
      pongWaited = false;
    });
    socket.on('error', (error) => logger.debug({ err: error }, 'live updates: socket error'));
    const closed = server.opened(
      {
        protocol: socket.protocol,
        send: async (data) => {
          if (socket.readyState !== socket.OPEN) return;
          socket.send(data);
          overBuffer();
        },
        close: (code, reason) => socket.close(code, reason),
        onMessage: (handle) =>
          socket.on('message', (data) => {
            handle(String(data)).catch((error: unknown) => {
              logger.error({ err: error }, 'live updates: message handling failed');
              socket.close(CLOSE_INTERNAL, 'Internal server error');
            });
          }),
      },
      {
        socket,
        liveSocket: {
          close: (code, reason) => socket.close(code, reason),
          sendAll(messages) {
            if (socket.readyState !== socket.OPEN) return;
            // Corked: the frames of one event leave in one write (one system call), not one each.
            transport.cork();
            try {
              for (const message of messages) {
                socket.send(message, { binary: false });
                if (overBuffer()) return;
              }
            } finally {
              transport.uncork();
            }
          },
        },
        request,
        clientAddress: options.clientAddressOf ? options.clientAddressOf(request) : request.socket.remoteAddress,
        subscriptions: new Set(),
        fields: new Map(),
      },
    );
    socket.once('close', (code, reason) => {
      clearInterval(keepAlive);
      closed(code, String(reason)).catch((error: unknown) => logger.error({ err: error }, 'live updates: closing a connection failed'));
    });
  };

  const onUpgrade = (request: http.IncomingMessage, socket: Duplex, head: Buffer) => {
    if (pathOf(request.url) !== '/graphql') return refuseUpgrade(socket, 404, 'Not Found');
    if (draining) return refuseUpgrade(socket, 503, 'Service Unavailable');
    sockets.handleUpgrade(request, socket, head, (ws) => opened(ws, request, socket));
  };
  httpServer.on('upgrade', onUpgrade);

  return {
    hub,
    beginDraining() {
      draining = true;
    },
    async close() {
      draining = true;
      httpServer.off('upgrade', onUpgrade);
      const open = [...sockets.clients];
      hub.closeAll(1001, 'Going away');
      for (const socket of open) socket.close(1001, 'Going away');
      await Promise.race([
        Promise.all(open.map((socket) => (socket.readyState === socket.CLOSED ? undefined : new Promise((resolve) => socket.once('close', resolve))))),
        new Promise((resolve) => setTimeout(resolve, CLOSE_HANDSHAKE_MS).unref()),
      ]);
      for (const socket of sockets.clients) socket.terminate();
      await new Promise<void>((resolve) => sockets.close(() => resolve()));
      await listener.close();
    },
  };
}
