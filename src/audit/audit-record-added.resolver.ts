import { Args, Ctx, Field, ObjectType, registerEnumType, Resolver, Root, Subscription } from 'type-graphql';
import { InvalidInputError } from '../errors/domain-errors.js';
import { requirePrincipal, type Context } from '../graphql/context.js';
import { freshEventScope, requireLiveSession, type LiveMessage } from '../graphql/live-session.js';
import { AuditRecordAddedArgs, AuditRecordFilterInput } from './audit-record.inputs.js';
import { auditCursor, positionOf } from './audit-cursors.js';
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

  @Field(() => String, {
    nullable: true,
    description: 'The record\'s cursor in the list the filter names (`auditRecords` with the same filter; with `userId` alone, that user\'s `userAuditRecords` and `User.auditRecords` without a window): an edge to add at the top of a cached list, and the `after` that resumes this subscription with nothing lost. Null on RESYNC.',
  })
  cursor!: string | null;
}

/**
 * The records appended to the account's chain after `position`, as change events of the account
 * arrive: each event (from any instance, or a `resync`) reads whatever was appended since the last
 * read, by chain position. Every change commits with its record, so the event of a change finds
 * it; several events of one transaction read it once; records no event announced (the feed was
 * lost) are read at the next event. A stream resumed from a cursor reads what was appended since at once.
 */
async function* appendedRecords(events: AsyncIterable<LiveMessage>, readAfter: (position: number) => ReturnType<AuditRecordsService['appendedAfter']>, position: number, resuming: boolean): AsyncGenerator<AuditStreamMessage> {
  let last = position;
  async function* readOn(): AsyncGenerator<AuditStreamMessage> {
    for (let more = true; more; ) {
      const appended = await readAfter(last);
      last = appended.through;
      more = appended.more;
      for (const record of appended.records) yield { kind: 'added', record };
    }
  }
  // Resumed from a cursor: what was appended since comes first, without waiting for a change.
  if (resuming) yield* readOn();
  for await (const message of events) {
    if (message.kind === 'resync') yield { kind: 'resync' };
    yield* readOn();
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

/** The list whose cursors a stream's events carry and whose cursors resume it: a user's records with `userId` alone, else `auditRecords` with the same filter. */
function listOf(filter: AuditRecordFilterInput | null | undefined): { cursorScope: unknown } {
  const given = Object.entries(filter ?? {}).filter(([, value]) => value !== undefined && value !== null);
  if (given.length === 1 && given[0]![0] === 'userId') return { cursorScope: { userId: filter!.userId } };
  return { cursorScope: { filter } };
}

@Resolver(() => AuditRecordAddedEvent)
export class AuditRecordAddedResolver {
  // Who may read the account's audit records (`auditRecords`) may follow them.
  @Subscription(() => AuditRecordAddedEvent, {
    description: 'Records appended to the account\'s audit trail from now on, as their changes commit, on any instance, in chain order. With `filter.userId`, that user\'s records (changes made to them), to the user themself or can_update_user; otherwise the account\'s, to owners, admins and full-access account keys. WebSocket only (graphql-ws).',
    subscribe: async ({ args, context }) => {
      const live = requireLiveSession(context as Context);
      const given = args.filter as AuditRecordFilterInput | null | undefined;
      const filter = liveFilter(given);
      const reads = () => new AuditRecordsService((context as Context).em, requirePrincipal(context as Context), (context as Context).runtime.urls);
      await reads().assertMayFollow(filter);
      const resumeAfter = args.after ? positionOf(args.after as string, context as Context, listOf(given).cursorScope) : undefined;
      // Listening before the chain's end is read: a record committed in between is announced after, and found then.
      const events = live.accountEvents();
      try {
        const position = resumeAfter ?? (await reads().lastPosition());
        return endingWith(events, appendedRecords(events, (after) => reads().appendedAfter(after, filter, CATCH_UP_BATCH), position, resumeAfter !== undefined));
      } catch (error) {
        await events.return?.();
        throw error;
      }
    },
  })
  auditRecordAdded(
    @Args(() => AuditRecordAddedArgs) args: AuditRecordAddedArgs,
    @Root() message: AuditStreamMessage,
    @Ctx() context: Context,
  ): AuditRecordAddedEvent {
    freshEventScope(context);
    if (message.kind !== 'added') return { kind: 'resync', record: null, cursor: null };
    return { kind: 'added', record: message.record, cursor: auditCursor(context, message.record, listOf(args.filter).cursorScope) };
  }
}
