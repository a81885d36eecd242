import DataLoader from 'dataloader';
import { Arg, Ctx, Field, FieldResolver, ID, Info, ObjectType, registerEnumType, Resolver, Root, Subscription } from 'type-graphql';
import type { GraphQLResolveInfo } from 'graphql';
import { requirePrincipal, type Context } from '../graphql/context.js';
import { freshEventScope, requireLiveSession, type LiveMessage } from '../graphql/live-session.js';
import { readPath } from '../db/read-path.js';
import { selectedFieldNames } from '../graphql/selection.js';
import { NotFoundError } from '../errors/domain-errors.js';
import { USER_FIELD_NAMES, restName } from './user.fields.js';
import { UserReads, type UserRow } from './user.reads.js';
import { UserType } from './user.type.js';

export const UserChangeKindEnum = { UPDATED: 'updated', DELETED: 'deleted', SUSPENDED: 'suspended', CHANGED: 'changed', RESYNC: 'resync' } as const;
type UserChangeKind = (typeof UserChangeKindEnum)[keyof typeof UserChangeKindEnum];

registerEnumType(UserChangeKindEnum, {
  name: 'UserChangeKind',
  description: 'What happened to a user followed by `userChanged`.',
  valuesConfig: {
    UPDATED: { description: 'Presented fields changed (`changedFields`).' },
    DELETED: { description: 'The user was deleted; `user` is null.' },
    SUSPENDED: { description: 'The user was suspended.' },
    CHANGED: { description: 'Another change of the user.' },
    RESYNC: { description: 'Changes may have been missed (the server lost its event feed for a while, or this client fell behind): read the user again.' },
  },
});

@ObjectType({ description: 'A change of a user, seen by a `userChanged` subscription.' })
export class UserChangedEvent {
  @Field(() => UserChangeKindEnum, { description: 'What happened to the user.' })
  kind!: UserChangeKind;

  @Field(() => ID, { description: 'The user\'s id.' })
  userId!: string;

  @Field(() => [String], { description: 'The presented fields that changed (GraphQL names); empty when unknown, on RESYNC and DELETED.' })
  changedFields!: string[];

  /** The event it presents: `user` is read once per event for all its subscribers. */
  message!: LiveMessage;
}

function kindOf(message: LiveMessage): UserChangeKind {
  if (message.kind === 'resync') return 'resync';
  const { action } = message.change;
  if (action === 'update') return 'updated';
  if (action === 'delete') return 'deleted';
  if (action === 'suspend') return 'suspended';
  return 'changed';
}

/**
 * Changes name fields as REST does (`job_title`); subscribers read GraphQL's names (`jobTitle`).
 * The fields of `User` a change of a user names are those a write sets and `active`; what else a
 * change records (a revocation's reason, a single sign-on link) is not named: `changedFields` holds
 * GraphQL field names only.
 */
const GRAPHQL_FIELD_NAMES = new Map<string, string>([...USER_FIELD_NAMES, 'active' as const].map((field) => [restName(field), field]));

/**
 * The user as it is at an event, read once for every subscription presented that event (the live
 * fan-out executes each group of subscribers with its own context, for the same message object):
 * the fields any of them select, in one statement. What the read finds depends only on the account
 * (another account's user is not found); each execution applies its own subscriber's rights to the fields.
 */
const usersAtEvent = new WeakMap<LiveMessage, Map<string, DataLoader<readonly string[], UserRow | null, string>>>();

function userAtEvent(event: UserChangedEvent, context: Context): DataLoader<readonly string[], UserRow | null, string> {
  const principal = requirePrincipal(context);
  let reads = usersAtEvent.get(event.message);
  if (!reads) {
    reads = new Map();
    usersAtEvent.set(event.message, reads);
  }
  const key = `${principal.accountId}:${event.userId}`;
  let loader = reads.get(key);
  if (!loader) {
    const userReads = new UserReads(readPath(context.em), principal);
    loader = new DataLoader<readonly string[], UserRow | null, string>(
      async (selections) => {
        try {
          const user = await userReads.get(event.userId, new Set(selections.flat()));
          return selections.map(() => user);
        } catch (error) {
          if (error instanceof NotFoundError) return selections.map(() => null);
          throw error;
        }
      },
      { cacheKeyFn: (fields) => [...fields].sort().join(',') },
    );
    reads.set(key, loader);
  }
  return loader;
}

@Resolver(() => UserChangedEvent)
export class UserChangedResolver {
  @Subscription(() => UserChangedEvent, {
    description: 'Changes of one user of the account, as they commit, on any instance; NOT_FOUND for deleted users and other accounts\' ids. WebSocket only (graphql-ws).',
    subscribe: async ({ args, context }) => {
      const live = requireLiveSession(context as Context);
      // The same answer as `user(id)`: another account's id is indistinguishable from one that never existed.
      await new UserReads(readPath((context as Context).em), requirePrincipal(context as Context)).get(args.id as string, ['id']);
      return live.userEvents(args.id as string);
    },
  })
  userChanged(@Arg('id', () => ID, { description: 'The user to follow.' }) id: string, @Root() message: LiveMessage, @Ctx() context: Context): UserChangedEvent {
    freshEventScope(context);
    const fields = message.kind === 'change' ? (message.change.fields ?? []) : [];
    return { kind: kindOf(message), userId: id, changedFields: fields.flatMap((name) => GRAPHQL_FIELD_NAMES.get(name) ?? []), message };
  }

  @FieldResolver(() => UserType, { nullable: true, description: 'The user as it is now (read when the event is sent), with the subscriber\'s rights; null once deleted.' })
  user(@Root() event: UserChangedEvent, @Ctx() context: Context, @Info() info: GraphQLResolveInfo): Promise<UserRow | null> {
    return userAtEvent(event, context).load([...selectedFieldNames(info)]);
  }
}
