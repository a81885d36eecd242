import type { ExecutionArgs, ExecutionResult } from 'graphql';
import { actingUserId, scopesOf, type Principal } from '../auth/principal.js';
import type { LiveMessage } from '../graphql/live-session.js';
import type { Logger } from '../logging/logger.js';
import { liveEventsDropped, liveEventsSent } from '../observability/metrics.js';
import type { EventStream } from './event-stream.js';

/** Events a topic may have waiting while one is being presented; more means its subscribers are far behind: they are told `resync` instead. */
export const MAX_BACKLOG_PER_TOPIC = 64;

/** What a connection must offer the fan-out: its principal's state and a way to send many frames at once. */
export interface GroupedConnection {
  readonly revoked: boolean;
  /** Sends the messages in order, as one write where the transport allows; the send buffer's bound applies. */
  sendAll(messages: readonly Buffer[]): void;
}

/** Executes a subscription's document for one event and answers the `payload` of its `next` message, serialized. */
export type PresentEvent = (args: ExecutionArgs, message: LiveMessage) => Promise<string>;

/**
 * Everything of a principal that authorization or presentation may depend on: who it acts as
 * (account, user) and what it may do (kind, role, read-only, scopes, first-party). Not the
 * credential itself: two sessions of one user with the same scopes see the same thing.
 */
export function rightsKey(principal: Principal): string {
  const scopes = scopesOf(principal);
  return JSON.stringify([
    principal.kind,
    principal.accountId,
    actingUserId(principal) ?? null,
    'role' in principal ? principal.role : null,
    principal.kind === 'account_key' ? principal.readOnly : null,
    principal.kind === 'oauth' ? principal.firstParty === true : null,
    scopes ? [...scopes].sort() : null,
  ]);
}

/**
 * What determines the payload a subscription is sent for an event, besides the event: the document,
 * the operation, the variables and the rights of the principal it runs as. Subscriptions with the
 * same key are executed once per event and sent the same payload.
 */
export function payloadKey(query: string, operationName: string | null | undefined, variables: unknown, principal: Principal): string {
  return JSON.stringify([query, operationName ?? null, variables ?? null, rightsKey(principal)]);
}

/**
 * One subscription served by its topic's fan-out rather than executed on its own. graphql-ws
 * iterates it: it yields nothing (the fan-out sends the events), and ends when its stream ends
 * (unsubscribe, connection closed), or fails with the error that made its group's execution throw.
 */
export class GroupedSubscription implements AsyncIterableIterator<ExecutionResult> {
  private failure?: { error: unknown };

  constructor(
    readonly connection: GroupedConnection,
    /** The graphql-ws id of the subscription, echoed in each of its messages. */
    readonly id: string,
    /** The root field: the label of its sent events. */
    readonly field: string,
    /** Its payload key: set anew when its connection's rights change, which moves it to another group. */
    public key: string,
    readonly args: ExecutionArgs,
    /** Its topic's stream, which ends with the subscription; nothing is pushed to it. */
    readonly stream: EventStream<LiveMessage>,
    /** The hub's sequence when it joined: it is sent only events published after. */
    readonly since: number,
  ) {}

  async next(): Promise<IteratorResult<ExecutionResult>> {
    await this.stream.next();
    if (this.failure) throw this.failure.error;
    return { value: undefined, done: true };
  }

  async return(): Promise<IteratorResult<ExecutionResult>> {
    this.stream.end();
    return { value: undefined, done: true };
  }

  async throw(error: unknown): Promise<IteratorResult<ExecutionResult>> {
    this.stream.end();
    throw error;
  }

  fail(error: unknown): void {
    this.failure ??= { error };
    this.stream.end();
  }

  [Symbol.asyncIterator](): this {
    return this;
  }
}

/**
 * The grouped subscriptions of one topic. Each published event is presented once per payload key
 * (one execution, one serialization), and the same bytes, prefixed with each subscription's id,
 * go to every socket of the group; a connection's messages of one group and event leave in one write. Events
 * are delivered one at a time, in order; a backlog beyond MAX_BACKLOG_PER_TOPIC becomes `resync`.
 */
export class TopicFanOut {
  /** By their stream, which the hub ends (and removes here) when the subscription or the connection ends. */
  readonly subscriptions = new Map<EventStream<LiveMessage>, GroupedSubscription>();
  private readonly backlog: { message: LiveMessage; sequence: number }[] = [];
  private delivering = false;

  constructor(
    private readonly present: PresentEvent,
    private readonly logger: Logger,
  ) {}

  enqueue(message: LiveMessage, sequence: number): void {
    if (this.subscriptions.size === 0) return;
    if (this.backlog.length >= MAX_BACKLOG_PER_TOPIC) {
      // Counted per subscription, as each would have dropped them from its own backlog.
      liveEventsDropped.inc({ reason: 'overflow' }, (this.backlog.length + 1) * this.subscriptions.size);
      this.backlog.length = 0;
      this.backlog.push({ message: { kind: 'resync' }, sequence });
    } else {
      this.backlog.push({ message, sequence });
    }
    if (!this.delivering) void this.deliverBacklog();
  }

  private async deliverBacklog(): Promise<void> {
    this.delivering = true;
    try {
      for (let next = this.backlog.shift(); next; next = this.backlog.shift()) {
        const sequence = next.sequence;
        const groups = byKey(this.subscriptions.values(), (subscription) => subscription.since < sequence && !subscription.connection.revoked);
        const { message } = next;
        try {
          await Promise.all(groups.map((group) => this.deliver(message, group)));
        } catch (error) {
          this.logger.error({ err: error }, 'live updates: sending an event failed');
        }
      }
    } finally {
      this.delivering = false;
    }
  }

  private async deliver(message: LiveMessage, group: readonly GroupedSubscription[]): Promise<void> {
    // The rights it is presented with: a member whose key changes meanwhile is presented again (below).
    const key = group[0]!.key;
    let payload: string;
    try {
      // Any member's arguments do: they differ only in what the key says is irrelevant (the credential, the request id).
      payload = await this.present(group[0]!.args, message);
    } catch (error) {
      this.logger.error({ err: error }, 'live updates: presenting an event failed; its subscriptions end with an error');
      for (const subscription of group) subscription.fail(error);
      return;
    }
    const framed = new Map<string, Buffer>();
    const perConnection = new Map<GroupedConnection, Buffer[]>();
    let sent = 0;
    const moved: GroupedSubscription[] = [];
    for (const subscription of group) {
      // Unsubscribed, or its access taken away, while the event was presented.
      if (this.subscriptions.get(subscription.stream) !== subscription || subscription.connection.revoked) continue;
      // Its rights changed while the event was presented (with the group's old rights): it is presented the event with its new ones.
      if (subscription.key !== key) {
        moved.push(subscription);
        continue;
      }
      let frame = framed.get(subscription.id);
      if (!frame) {
        frame = Buffer.from(`{"id":${JSON.stringify(subscription.id)},"type":"next","payload":${payload}}`);
        framed.set(subscription.id, frame);
      }
      const messages = perConnection.get(subscription.connection);
      if (messages) messages.push(frame);
      else perConnection.set(subscription.connection, [frame]);
      sent++;
    }
    for (const [connection, messages] of perConnection) connection.sendAll(messages);
    if (sent) liveEventsSent.inc({ field: group[0]!.field }, sent);
    if (moved.length) await Promise.all(byKey(moved).map((movedGroup) => this.deliver(message, movedGroup)));
  }
}

/** Subscriptions grouped by their payload key, in order. */
function byKey(subscriptions: Iterable<GroupedSubscription>, include: (subscription: GroupedSubscription) => boolean = () => true): GroupedSubscription[][] {
  const groups = new Map<string, GroupedSubscription[]>();
  for (const subscription of subscriptions) {
    if (!include(subscription)) continue;
    const group = groups.get(subscription.key);
    if (group) group.push(subscription);
    else groups.set(subscription.key, [subscription]);
  }
  return [...groups.values()];
}
