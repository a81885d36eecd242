import type { NextFunction, Request, Response, Router } from 'express';
import type { HttpRouteDeps } from '../app/feature.js';
import type { PlainOperationDescription } from '../rest/description.js';
import { sendError } from '../rest/envelopes.js';
import { calendarKeyCodec } from './calendar-key.codec.js';
import { renderFeed } from './calendar-feed.ical.js';
import { CalendarFeedService } from './calendar-feed.service.js';
import { OnCallShiftsService } from './oncall-shifts.service.js';

/** The URL is a credential: keep it out of shared caches, referrers and search indexes. */
const FEED_HEADERS = {
  'Cache-Control': 'private, no-cache',
  'Referrer-Policy': 'no-referrer',
  'X-Robots-Tag': 'noindex, nofollow',
};

/**
 * `GET /private/{key}/feed`: the iCal feed, authenticated by the key in the URL alone. An unknown,
 * rotated or deleted user's key answers the same 404 after the same work (see findFeedOwner).
 * `ETag` / `Last-Modified` let calendar apps poll with `If-None-Match` / `If-Modified-Since` (304).
 */
export function calendarFeedHttpRoutes(router: Router, deps: HttpRouteDeps): void {
  router.get('/private/:key/feed', deps.limitPerAddress, async (req: Request, res: Response, next: NextFunction) => {
    try {
      const em = deps.database.em();
      const owner = await new CalendarFeedService(em, calendarKeyCodec(deps.runtime.serverSecret), deps.database.transactions).findFeedOwner(String(req.params.key));
      res.set(FEED_HEADERS);
      if (!owner) return sendError(res, 'not_found', 'Not Found', ['No calendar feed at this URL.']);
      const shifts = await new OnCallShiftsService(em).forFeed(owner.userId);
      const feed = renderFeed(owner, shifts, deps.runtime.urls.feed);
      res.set({ ETag: feed.etag, 'Last-Modified': feed.lastModified.toUTCString() });
      if (req.fresh) {
        res.status(304).end();
        return;
      }
      res.status(200).set({ 'Content-Type': 'text/calendar; charset=utf-8', 'Content-Disposition': 'inline; filename="on-call.ics"' }).send(feed.body);
    } catch (error) {
      next(error);
    }
  });
}

export const calendarFeedHttpRouteDescriptions: PlainOperationDescription[] = [
  {
    method: 'get',
    path: '/private/{key}/feed',
    server: 'feed',
    operation: {
      operationId: 'getCalendarFeed',
      summary: "A user's on-call calendar (iCal)",
      description:
        'The URL is the credential (`http_cal_url` / `web_cal_url` of a user): no Authorization header, no `Accept` versioning, no rate-limit headers; ' +
        'requests count against the client address\'s budget (429 with `Retry-After` past it). ' +
        'Poll with `If-None-Match` / `If-Modified-Since`. An unknown, rotated or deleted key is 404, indistinguishable from one that never existed.',
      tags: ['Calendar feed'],
      security: [],
      parameters: [{ name: 'key', in: 'path', required: true, description: 'The private calendar key.', schema: { type: 'string' } }],
      responses: {
        200: {
          description: 'An RFC 5545 calendar of the user\'s on-call shifts.',
          headers: {
            ETag: { schema: { type: 'string' } },
            'Last-Modified': { schema: { type: 'string' } },
            'Cache-Control': { schema: { type: 'string', enum: [FEED_HEADERS['Cache-Control']] } },
          },
          content: { 'text/calendar': { schema: { type: 'string' } } },
        },
        304: { description: 'Not modified since the ETag or date the calendar app sent.' },
        404: { description: 'No calendar feed at this URL.', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } },
        429: { description: 'Too many requests from this client address (the anonymous per-address budget).', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } },
      },
    },
  },
];
