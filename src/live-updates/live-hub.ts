import { setTimeout as sleep } from 'node:timers/promises';
import { authenticate, type CredentialResolver } from '../auth/authenticate.js';
import type { Principal } from '../auth/principal.js';
import type { Database } from '../db/database.js';
import type { AccessRevocationReason, LiveChange, LiveMessage, LiveSession, ViewerAccessMessage } from '../graphql/live-session.js';
import type { Logger } from '../logging/logger.js';
import { liveEventsDropped } from '../observability/metrics.js';
import { EventStream } from './event-stream.js';
import { rightsKey, TopicFanOut, type GroupedConnection, type GroupedSubscription, type PresentEvent } from './grouped-delivery.js';

/** Events one subscription may have waiting; more means the client is far behind: it is told `resync` instead. */
const MAX_BACKLOG_PER_SUBSCRIPTION = 64;
/** How long the server waits for `viewerAccessRevoked` to be sent before it closes the connection. */
const REVOCATION_NOTICE_MS = 250;
/** A re-check that could not reach the database is tried again after this long. */
const RECHECK_RETRY_MS = 1_000;
/** setTimeout's ceiling; a later expiry is re-armed when it is reached. */
const MAX_TIMER_MS = 2_147_483_647;

/** Closes the connection: its credential stopped working (not sent for a change of its rights alone). */
export const CLOSE_ACCESS_REVOKED = 4403;

/**
 * A subscription of a connection, as the hub sees it when the connection's rights change while its
 * credential keeps working (a role lowered, a scope narrowed): it runs its authorization again.
 */
export interface ActiveSubscription {
  /** The subscribe message's payload it serves (a completed subscription's id may be reused by another). */
  readonly origin: object;
  /** Authorizes the subscription anew with the connection's current principal; refused, it ends with the refusal (FORBIDDEN). */
  reauthorize(): Promise<void>;
}

/** What the hub needs of one WebSocket connection. */
export interface LiveConnectionSocket {
  close(code: number, reason: string): void;
  /** Sends text frames in order, in one write; a connection past its send buffer's bound is cut. */
  sendAll(messages: readonly Buffer[]): void;
}

/**
 * One accepted connection: the credential it presented (kept to re-check it against the database
 * when its user's access changes and at its expiry), the principal it acts as, its streams.
 */
export class LiveConnection implements GroupedConnection {
  revoked = false;
  private readonly viewerStreams = new Set<EventStream<ViewerAccessMessage>>();
  /** The streams of change subscriptions (of a user, of the account). */
  readonly changeStreams = new Set<EventStream<LiveMessage>>();
  /** The connection's subscriptions by their graphql-ws id, as the socket server registers them. */
  readonly subscriptions = new Map<string, ActiveSubscription>();
  expiryTimer?: NodeJS.Timeout;
  recheck?: Promise<void>;
  recheckAgain = false;

  constructor(
    readonly id: string,
    readonly socket: LiveConnectionSocket,
    readonly authorization: string,
    public principal: Principal,
  ) {}

  get userId(): string | undefined {
    return 'userId' in this.principal ? this.principal.userId : undefined;
  }

  sendAll(messages: readonly Buffer[]): void {
    this.socket.sendAll(messages);
  }

  viewerStream(): EventStream<ViewerAccessMessage> {
    // At most one message is ever pushed (the connection closes after it): the backlog never overflows.
    const stream: EventStream<ViewerAccessMessage> = new EventStream<ViewerAccessMessage>(4, () => ({ reason: 'credential_revoked', occurredAt: new Date() }), () => this.viewerStreams.delete(stream));
    this.viewerStreams.add(stream);
    return stream;
  }

  /** Tells every `viewerAccessRevoked` subscription, waits (bounded) until it is sent, then closes. */
  async revoke(reason: AccessRevocationReason): Promise<void> {
    if (this.revoked) return;
    this.revoked = true;
    clearTimeout(this.expiryTimer);
    const message: ViewerAccessMessage = { reason, occurredAt: new Date() };
    const streams = [...this.viewerStreams];
    for (const stream of streams) stream.push(message);
    await Promise.race([Promise.all(streams.map((stream) => stream.whenDelivered())), sleep(REVOCATION_NOTICE_MS)]);
    this.socket.close(CLOSE_ACCESS_REVOKED, `Forbidden: ${reason.replace(/_/g, ' ')}`);
  }

  /**
   * The credential still works but grants other rights: the connection acts with them from now on
   * (every subscription's context reads the connection's principal), and each subscription is
   * authorized anew; those now refused end with FORBIDDEN, the others continue with the new rights.
   */
  async changeRights(principal: Principal, logger: Logger): Promise<void> {
    this.principal = principal;
    await Promise.all(
      [...this.subscriptions.values()].map((subscription) =>
        subscription.reauthorize().catch((error: unknown) => logger.error({ err: error, connection: this.id }, 'live updates: re-authorizing a subscription failed')),
      ),
    );
  }

  end(): void {
    this.subscriptions.clear();
    clearTimeout(this.expiryTimer);
    for (const stream of [...this.viewerStreams, ...this.changeStreams]) stream.end();
  }
}

/** The same credential acting for the same account (and so the same user): anything else is another credential. */
function sameCredential(a: Principal, b: Principal): boolean {
  return a.kind === b.kind && a.accountId === b.accountId && a.credentialId === b.credentialId;
}

function revocationReason(change: LiveChange | undefined, expired: boolean): AccessRevocationReason {
  if (expired) return 'credential_expired';
  if (change?.resourceType === 'user' && change.action === 'delete') return 'user_deleted';
  if (change?.resourceType === 'user' && change.action === 'suspend') return 'user_suspended';
  return 'credential_revoked';
}

/**
 * The subscribers of one topic (a user's changes, an account's): streams read by their own
 * subscription (each executes every event itself), and subscriptions grouped in the fan-out.
 */
interface LiveTopic {
  readonly streamed: Set<EventStream<LiveMessage>>;
  readonly fanOut: TopicFanOut;
}

/**
 * An instance's live state: its accepted connections and the streams of their subscriptions, fed
 * by the changes its listening connection hears. Change subscriptions are grouped where they can be
 * (`deliverGrouped`): an event is then executed once per group of subscriptions that would be sent
 * the same payload, not once per subscription. A change that takes access away from a user
 * re-checks, against the database, the credential of every connection acting as that user (or for
 * the whole account): what no longer authenticates is told (`viewerAccessRevoked`) and closed
 * (4403); what still authenticates with other rights (a lowered role, narrowed scopes) stays open,
 * and each of its subscriptions is authorized anew (`LiveConnection.changeRights`). Suspension,
 * deletion, revocation and a lowered role all work this way, whoever announces them.
 */
export class LiveHub {
  private readonly connections = new Set<LiveConnection>();
  private readonly userTopics = new Map<string, LiveTopic>();
  private readonly accountTopics = new Map<string, LiveTopic>();
  /** Each topic stream's topic, for `deliverGrouped`. */
  private readonly topicOfStream = new WeakMap<EventStream<LiveMessage>, LiveTopic>();
  private readonly perCredential = new Map<string, number>();
  /** Numbers published events, so a subscription that joins while earlier ones wait is not sent them. */
  private sequence = 0;

  constructor(
    private readonly database: Pick<Database, 'em'>,
    private readonly resolvers: readonly CredentialResolver[],
    private readonly logger: Logger,
    private readonly present: PresentEvent,
  ) {}

  get size(): number {
    return this.connections.size;
  }

  /**
   * No connection and no topic: a change published now would reach no stream and re-check no
   * credential (a connection still being accepted is not in the hub either way), so the listener
   * need not even decode it. Skipping it leaves the sequence behind, which only orders events
   * relative to subscriptions that exist.
   */
  get idle(): boolean {
    return this.connections.size === 0 && this.userTopics.size === 0 && this.accountTopics.size === 0;
  }

  connectionsOf(credentialId: string): number {
    return this.perCredential.get(credentialId) ?? 0;
  }

  add(connection: LiveConnection, expiresAt: Date | undefined): void {
    this.connections.add(connection);
    this.perCredential.set(connection.principal.credentialId, this.connectionsOf(connection.principal.credentialId) + 1);
    this.armExpiry(connection, expiresAt);
  }

  remove(connection: LiveConnection): void {
    if (!this.connections.delete(connection)) return;
    connection.end();
    const left = this.connectionsOf(connection.principal.credentialId) - 1;
    if (left > 0) this.perCredential.set(connection.principal.credentialId, left);
    else this.perCredential.delete(connection.principal.credentialId);
  }

  /** The event streams a subscription of `connection` reads. */
  session(connection: LiveConnection): LiveSession {
    return {
      userEvents: (userId) => this.topicStream(this.userTopics, `${connection.principal.accountId}:${userId}`, connection),
      accountEvents: () => this.topicStream(this.accountTopics, connection.principal.accountId, connection),
      viewerAccessEvents: () => connection.viewerStream(),
    };
  }

  /** A stream of `topic` in `topics`, ended with the subscription or the connection. */
  private topicStream(topics: Map<string, LiveTopic>, topic: string, connection: LiveConnection): EventStream<LiveMessage> {
    let subscribers = topics.get(topic);
    if (!subscribers) {
      subscribers = { streamed: new Set(), fanOut: new TopicFanOut(this.present, this.logger) };
      topics.set(topic, subscribers);
    }
    const { streamed, fanOut } = subscribers;
    const stream: EventStream<LiveMessage> = new EventStream<LiveMessage>(
      MAX_BACKLOG_PER_SUBSCRIPTION,
      (dropped) => {
        liveEventsDropped.inc({ reason: 'overflow' }, dropped);
        return { kind: 'resync' };
      },
      () => {
        streamed.delete(stream);
        fanOut.subscriptions.delete(stream);
        if (streamed.size === 0 && fanOut.subscriptions.size === 0) topics.delete(topic);
        connection.changeStreams.delete(stream);
      },
    );
    streamed.add(stream);
    this.topicOfStream.set(stream, subscribers);
    connection.changeStreams.add(stream);
    return stream;
  }

  /**
   * Serves `subscription` through its topic's fan-out from now on, if its stream is a topic stream
   * of this hub that holds no event yet (graphql-ws hands it over in the turn its resolver created
   * it, so none arrived). Otherwise false: the caller executes the subscription's events itself.
   */
  deliverGrouped(subscription: GroupedSubscription): boolean {
    const topic = this.topicOfStream.get(subscription.stream);
    if (!topic || subscription.stream.pending > 0 || !topic.streamed.delete(subscription.stream)) return false;
    topic.fanOut.subscriptions.set(subscription.stream, subscription);
    return true;
  }

  /** The sequence number of the last published event: a grouped subscription created now is sent only later ones. */
  get lastSequence(): number {
    return this.sequence;
  }

  private publishTo(topic: LiveTopic | undefined, message: LiveMessage): void {
    if (!topic) return;
    for (const stream of topic.streamed) stream.push(message);
    topic.fanOut.enqueue(message, this.sequence);
  }

  /** Committed changes, from this instance or another. */
  publish(changes: readonly LiveChange[]): void {
    for (const change of changes) {
      this.sequence++;
      // One message object per event: every subscriber of it is presented the same (reads made for it may be shared).
      const message: LiveMessage = { kind: 'change', change };
      this.publishTo(this.accountTopics.get(change.accountId), message);
      if (change.resourceType === 'user') this.publishTo(this.userTopics.get(`${change.accountId}:${change.resourceId}`), message);
      if (!change.revokesAccess) continue;
      for (const connection of this.connections) {
        if (connection.principal.accountId !== change.accountId) continue;
        // Account-level credentials (keys, apps) are re-checked on any revocation in their account: one indexed query each.
        // A revocation about no user (an app disabled or deleted) may end any user's tokens of that app: every connection of the account is re-checked.
        if (connection.userId === undefined || change.userId === undefined || connection.userId === change.userId || connection.principal.credentialId === change.resourceId) this.recheck(connection, change);
      }
    }
  }

  /** The listening connection was lost: whatever was announced meanwhile is unknown. Streams say `resync`; every credential is re-checked. */
  resync(): void {
    this.sequence++;
    const message: LiveMessage = { kind: 'resync' };
    for (const topics of [this.userTopics, this.accountTopics]) for (const topic of topics.values()) this.publishTo(topic, message);
    for (const connection of this.connections) this.recheck(connection, undefined);
  }

  /** Closes every connection with `code` (shutdown: 1001). */
  closeAll(code: number, reason: string): void {
    for (const connection of [...this.connections]) {
      connection.socket.close(code, reason);
      this.remove(connection);
    }
  }

  private armExpiry(connection: LiveConnection, expiresAt: Date | undefined): void {
    clearTimeout(connection.expiryTimer);
    connection.expiryTimer = undefined;
    if (!expiresAt) return;
    const delay = Math.max(0, expiresAt.getTime() - Date.now());
    connection.expiryTimer = setTimeout(() => {
      if (delay > MAX_TIMER_MS) this.armExpiry(connection, expiresAt);
      else this.recheck(connection, undefined, true);
    }, Math.min(delay, MAX_TIMER_MS));
    connection.expiryTimer.unref();
  }

  /** Re-checks the connection's credential as a new request's would be; one at a time per connection. */
  private recheck(connection: LiveConnection, change: LiveChange | undefined, expiring = false): void {
    if (connection.revoked || !this.connections.has(connection)) return;
    if (connection.recheck) {
      connection.recheckAgain = true;
      return;
    }
    connection.recheck = (async () => {
      try {
        const authentication = await authenticate(this.database.em(), connection.authorization, this.resolvers, 'websocket');
        if (authentication.status !== 'authenticated') return await connection.revoke(revocationReason(change, expiring));
        if (!sameCredential(connection.principal, authentication.principal)) return await connection.revoke('credential_revoked');
        if (rightsKey(connection.principal) !== rightsKey(authentication.principal)) await connection.changeRights(authentication.principal, this.logger);
        else connection.principal = authentication.principal;
        this.armExpiry(connection, authentication.principal.expiresAt);
      } catch (error) {
        this.logger.warn({ err: error, connection: connection.id }, 'live updates: could not re-check a connection\'s credential; retrying');
        setTimeout(() => this.recheck(connection, change, expiring), RECHECK_RETRY_MS).unref();
      } finally {
        connection.recheck = undefined;
        if (connection.recheckAgain) {
          connection.recheckAgain = false;
          this.recheck(connection, change, expiring);
        }
      }
    })();
  }
}
