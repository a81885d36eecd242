import { Arg, Ctx, Field, ObjectType, registerEnumType, Resolver, Root, Subscription } from 'type-graphql';
import { InvalidInputError } from '../errors/domain-errors.js';
import { requirePrincipal, type Context } from '../graphql/context.js';
import { freshEventScope, requireLiveSession, type LiveMessage } from '../graphql/live-session.js';
import { AuditRecordFilterInput } from './audit-record.inputs.js';
import { AuditRecordType } from './audit-record.type.js';
import { AuditRecordsService, auditSelection, type AuditMatch, type PresentedAuditRecord } from './audit-records.service.js';

/** Records read per statement while a subscriber catches up (a bulk write appends thousands at once). */
const CATCH_UP_BATCH = 100;

export const AuditRecordAddedKindEnum = { ADDED: 'added', RESYNC: 'resync' } as const;
type AuditRecordAddedKind = (typeof AuditRecordAddedKindEnum)[keyof typeof AuditRecordAddedKindEnum];

registerEnumType(AuditRecordAddedKindEnum, {
  name: 'AuditRecordAddedKind',
  description: 'What an `auditRecordAdded` event says.',
  valuesConfig: {
    ADDED: { description: 'A record was appended (`record`).' },
    RESYNC: { description: 'The server lost its event feed for a while: the records appended meanwhile follow as ADDED events, but anything else derived from the stream should be read again.' },
  },
});

type AuditStreamMessage = { kind: 'added'; record: PresentedAuditRecord } | { kind: 'resync' };

@ObjectType({ description: 'An event of an `auditRecordAdded` subscription.' })
export class AuditRecordAddedEvent {
  @Field(() => AuditRecordAddedKindEnum, { description: 'ADDED with a record, or RESYNC.' })
  kind!: AuditRecordAddedKind;

  @Field(() => AuditRecordType, { nullable: true, description: 'The record, as `auditRecords` presents it; null on RESYNC.' })
  record!: PresentedAuditRecord | null;
}

/**
 * The records appended to the account's chain after `position`, as change events of the account
 * arrive: each event (from any instance, or a `resync`) reads whatever was appended since the last
 * read, by chain position. Every change commits with its record, so the event of a change finds
 * it; several events of one transaction read it once; records no event announced (the feed was
 * lost) are read at the next event.
 */
async function* appendedRecords(events: AsyncIterable<LiveMessage>, readAfter: (position: number) => ReturnType<AuditRecordsService['appendedAfter']>, position: number): AsyncGenerator<AuditStreamMessage> {
  let last = position;
  for await (const message of events) {
    if (message.kind === 'resync') yield { kind: 'resync' };
    for (let more = true; more; ) {
      const appended = await readAfter(last);
      last = appended.through;
      more = appended.more;
      for (const record of appended.records) yield { kind: 'added', record };
    }
  }
}

/** The generator, but ended at once on unsubscribe: a generator waiting for the next change event could not be. */
function endingWith(events: AsyncIterableIterator<LiveMessage>, stream: AsyncGenerator<AuditStreamMessage>): AsyncIterableIterator<AuditStreamMessage> {
  return {
    next: () => stream.next(),
    return: async () => {
      await events.return?.();
      return stream.return(undefined);
    },
    throw: async (error: unknown) => {
      await events.return?.();
      return stream.throw(error);
    },
    [Symbol.asyncIterator]() {
      return this;
    },
  };
}

/** `auditRecords`' filter, which a stream of records appended from now on takes without its window. */
function liveFilter(filter: AuditRecordFilterInput | null | undefined): AuditMatch {
  if (filter?.since || filter?.until) throw new InvalidInputError('since and until do not apply to auditRecordAdded: it delivers records as they are appended');
  const match: AuditMatch = { ...filter };
  auditSelection(match);
  return match;
}

@Resolver(() => AuditRecordAddedEvent)
export class AuditRecordAddedResolver {
  // Who may read the account's audit records (`auditRecords`) may follow them.
  @Subscription(() => AuditRecordAddedEvent, {
    description: 'Records appended to the account\'s audit trail from now on, as their changes commit, on any instance, in chain order. Owners, admins and full-access account keys. WebSocket only (graphql-ws).',
    subscribe: async ({ args, context }) => {
      const live = requireLiveSession(context as Context);
      const filter = liveFilter(args.filter as AuditRecordFilterInput | null | undefined);
      const reads = () => new AuditRecordsService((context as Context).em, requirePrincipal(context as Context), (context as Context).runtime.urls);
      // Listening before the chain's end is read: a record committed in between is announced after, and found then.
      const events = live.accountEvents();
      try {
        const position = await reads().lastPosition();
        return endingWith(events, appendedRecords(events, (after) => reads().appendedAfter(after, filter, CATCH_UP_BATCH), position));
      } catch (error) {
        await events.return?.();
        throw error;
      }
    },
  })
  auditRecordAdded(
    @Arg('filter', () => AuditRecordFilterInput, { nullable: true, description: 'As for `auditRecords`, without `since` and `until`.' }) _filter: AuditRecordFilterInput | null | undefined,
    @Root() message: AuditStreamMessage,
    @Ctx() context: Context,
  ): AuditRecordAddedEvent {
    freshEventScope(context);
    return message.kind === 'added' ? { kind: 'added', record: message.record } : { kind: 'resync', record: null };
  }
}
