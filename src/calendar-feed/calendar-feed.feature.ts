import type { Feature } from '../app/feature.js';
import { CalendarFeedKey } from './calendar-feed-key.entity.js';
import { calendarFeedHttpRouteDescriptions, calendarFeedHttpRoutes } from './calendar-feed.http.js';
import { calendarFeedRoutes } from './calendar-feed.rest.js';
import { CalendarFeedResolver } from './calendar-feed.resolver.js';
import { CalendarFeedService } from './calendar-feed.service.js';
import { OnCallShift } from './oncall-shift.entity.js';

/** Private calendar keys (User.httpCalUrl / webCalUrl, regeneration), on-call shifts and the iCal feed. */
export const calendarFeedFeature: Feature = {
  name: 'calendar-feed',
  entities: [CalendarFeedKey, OnCallShift],
  resolvers: [CalendarFeedResolver],
  routes: calendarFeedRoutes,
  httpRoutes: calendarFeedHttpRoutes,
  httpRouteDescriptions: calendarFeedHttpRouteDescriptions,
  onUserDeleted: (em, user) => CalendarFeedService.invalidate(em, user.id),
  onUserSuspended: (em, user) => CalendarFeedService.invalidate(em, user.id),
};
