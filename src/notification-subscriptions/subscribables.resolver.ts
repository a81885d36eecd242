import { Args, ArgsType, Ctx, Field, ID, Int, ObjectType, Query, Resolver } from 'type-graphql';
import { InvalidInputError } from '../errors/domain-errors.js';
import { checkPageArgs, connectionType } from '../graphql/connection.js';
import { requirePrincipal, type Context } from '../graphql/context.js';
import { CURSOR_MAX_LENGTH } from '../graphql/cursor.js';
import { MaxLength } from '../graphql/input-bounds.js';
import { NotificationSubscribableTypeEnum } from './notification-subscription.type.js';
import { MAX_SUBSCRIBABLE_FIELD_LENGTH, type SubscribableType } from './subscribable.entity.js';
import { SubscribablesService, type SubscribableEntry } from './subscribables.service.js';

const MAX_SUBSCRIBABLES_PAGE = 100;
const SUBSCRIBABLES_CURSOR = 'subscribables';

@ObjectType('Subscribable', { description: 'An entity of the account users may subscribe to (an incident, a business service): the registry a picker offers.' })
export class SubscribableObject {
  @Field(() => ID, { description: 'Unique across types (an incident and a service may share a subscribableId): what a client cache keys it by.' })
  id!: string;

  @Field(() => ID, { description: 'The id to subscribe with (createNotificationSubscriptions\' subscribableId).' })
  subscribableId!: string;

  @Field(() => NotificationSubscribableTypeEnum, { description: 'What kind of entity it is.' })
  type!: SubscribableType;

  @Field({ description: 'Its name, as registered.' })
  name!: string;
}

const SubscribableConnection = connectionType<SubscribableObject>('Subscribable', () => SubscribableObject);

@ArgsType()
class SubscribablesArgs {
  @Field(() => Int, { defaultValue: 25, description: `Page size, 1 to ${MAX_SUBSCRIBABLES_PAGE}.` })
  first!: number;

  @MaxLength(CURSOR_MAX_LENGTH)
  @Field(() => String, { nullable: true, description: 'An endCursor from a previous page of the same type and query.' })
  after?: string | null;

  @Field(() => NotificationSubscribableTypeEnum, { nullable: true, description: 'Only entities of this type (default: all).' })
  type?: SubscribableType | null;

  @MaxLength(MAX_SUBSCRIBABLE_FIELD_LENGTH)
  @Field(() => String, { nullable: true, description: 'Only entities whose name or subscribableId contains this text, whatever the case.' })
  query?: string | null;
}

function toObject(entry: SubscribableEntry): SubscribableObject {
  return { id: entry.key, subscribableId: entry.publicId, type: entry.type, name: entry.name };
}

@Resolver()
export class SubscribablesResolver {
  @Query(() => SubscribableConnection, {
    description: 'The account\'s registry of subscribable entities, in name order, for a picker. Any member of the account may read it '
      + '(it names what may be subscribed to, nothing about users); a token needs subscribers.read.',
  })
  async subscribables(@Args(() => SubscribablesArgs) args: SubscribablesArgs, @Ctx() context: Context) {
    checkPageArgs(args, MAX_SUBSCRIBABLES_PAGE);
    const { accountId } = requirePrincipal(context);
    const type = args.type ?? undefined;
    const query = args.query?.trim() || undefined;
    let after: { name: string; type: string; publicId: string } | undefined;
    if (args.after) {
      const position = context.runtime.cursors.decode<{ n?: unknown; t?: unknown; i?: unknown; ft?: unknown; fq?: unknown }>(SUBSCRIBABLES_CURSOR, args.after, 'after');
      // A cursor belongs to its query: another type or search would page a different list.
      if ((position.ft ?? null) !== (type ?? null) || (position.fq ?? null) !== (query ?? null)) {
        throw new InvalidInputError('after is a cursor of another type or query; start again without it');
      }
      if (typeof position.n !== 'string' || typeof position.t !== 'string' || typeof position.i !== 'string') throw new InvalidInputError('after is not a valid cursor for this list');
      after = { name: position.n, type: position.t, publicId: position.i };
    }
    const page = await new SubscribablesService(context.em).page(accountId, { first: args.first, type, query, after });
    return SubscribableConnection.from({
      items: page.items.map(toObject),
      hasNextPage: page.hasNextPage,
      hasPreviousPage: after !== undefined,
      countTotal: page.countTotal,
      cursorOf: (item) => context.runtime.cursors.encode(SUBSCRIBABLES_CURSOR, { n: item.name, t: item.type, i: item.subscribableId, ft: type ?? null, fq: query ?? null }),
    });
  }
}
