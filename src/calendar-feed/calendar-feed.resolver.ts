import DataLoader from 'dataloader';
import { Arg, Ctx, FieldResolver, Mutation, Resolver, Root } from 'type-graphql';
import { URLScalar } from '../graphql/scalars.js';
import { NotFoundError } from '../errors/domain-errors.js';
import { actingUserId } from '../auth/principal.js';
import type { BeforeAnswer } from '../graphql/before-answer.js';
import { requirePrincipal, type Context } from '../graphql/context.js';
import type { User } from '../users/user.entity.js';
import { UserType } from '../users/user.type.js';
import { calendarKeyCodec, calendarUrls } from './calendar-key.codec.js';
import { CalendarFeedService } from './calendar-feed.service.js';
import { RegenerateUserCalendarKeyInput, RegenerateUserCalendarKeyPayload } from './calendar-feed.types.js';

const KEYS_LOADER = 'calendar-feed-keys';
const URLS_SHOWN = 'calendar-urls-shown';

function calendarFeedService(context: Context): CalendarFeedService {
  return new CalendarFeedService(context.em, calendarKeyCodec(context.runtime.serverSecret), context.transactions);
}

/**
 * Per request: the current key of each user asked for, in one batch (created at first use). Where
 * the answer is sent as soon as it is executed (a subscription's event), the batch records the
 * other users it shows itself; otherwise `urlsShown` does, once for the whole answer.
 */
function keysLoader(context: Context): DataLoader<string, string> {
  return context.loaders.get(KEYS_LOADER, () =>
    new DataLoader<string, string>(async (userIds) => {
      const keys = await calendarFeedService(context).currentKeys(userIds, context.beforeAnswer ? undefined : requirePrincipal(context));
      return userIds.map((id) => keys.get(id) ?? new NotFoundError('user'));
    }),
  );
}

/**
 * The users other than the caller whose URLs this request's answer shows, however many fields,
 * aliases and lists of the document show them (and in however many batches they were loaded):
 * recorded in one `view_calendar_urls` record before the answer goes out (one record per
 * request), and only if it does, as the answer is the showing.
 */
function urlsShown(context: Context, beforeAnswer: BeforeAnswer): Set<string> {
  return context.loaders.get(URLS_SHOWN, () => {
    const shown = new Set<string>();
    beforeAnswer.add(async () => {
      const userIds = [...shown];
      shown.clear();
      if (userIds.length) await calendarFeedService(context).recordUrlsShown(requirePrincipal(context), userIds);
    });
    return shown;
  });
}

async function urlsFor(user: User, context: Context): Promise<{ http: string; webcal: string }> {
  const principal = requirePrincipal(context);
  CalendarFeedService.assertMayReadUrls(principal, user.id);
  const key = await keysLoader(context).load(user.id);
  if (context.beforeAnswer && user.id !== actingUserId(principal)) urlsShown(context, context.beforeAnswer).add(user.id);
  return calendarUrls(context.runtime.urls.feed, key);
}

const URL_RULE = 'Only for the user themself and for holders of can_update_user (never a read-only account key); anyone else gets a FORBIDDEN error on this field. A bearer credential: anyone holding it reads the calendar.';

/** Adds the calendar URLs to the `User` type, and the regeneration mutation. */
@Resolver(() => UserType)
export class CalendarFeedResolver {
  @FieldResolver(() => URLScalar, { nullable: true, description: `The user's private iCal feed URL (https). ${URL_RULE}` })
  async httpCalUrl(@Root() user: User, @Ctx() context: Context): Promise<string> {
    return (await urlsFor(user, context)).http;
  }

  @FieldResolver(() => URLScalar, { nullable: true, description: `The same feed as \`httpCalUrl\` with the webcal:// scheme. ${URL_RULE}` })
  async webCalUrl(@Root() user: User, @Ctx() context: Context): Promise<string> {
    return (await urlsFor(user, context)).webcal;
  }

  @Mutation(() => RegenerateUserCalendarKeyPayload, {
    description: 'Replaces the user\'s private calendar key: the old feed URLs stop working at once. The user themself (any role) or a holder of can_update_user.',
  })
  async regenerateUserCalendarKey(
    @Arg('input', () => RegenerateUserCalendarKeyInput, { description: 'What to change: see the input type.' }) input: RegenerateUserCalendarKeyInput,
    @Ctx() context: Context,
  ): Promise<RegenerateUserCalendarKeyPayload> {
    const { user, key } = await calendarFeedService(context).regenerate(requirePrincipal(context), input.userId);
    // The payload's user shows the key this call created, even if another regeneration followed.
    keysLoader(context).clear(user.id).prime(user.id, key);
    return { user, privateUrlKey: key };
  }
}
