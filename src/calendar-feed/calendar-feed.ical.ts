import { createHash } from 'node:crypto';
import ical from 'ical-generator';
import type { FeedOwner } from './calendar-feed.service.js';
import type { FeedShift } from './oncall-shifts.service.js';

export interface RenderedFeed {
  body: string;
  /** Strong validator: a hash of the exact body, so any change (a shift, the user's name) changes it. */
  etag: string;
  lastModified: Date;
}

/** How often calendar apps are told to poll (REFRESH-INTERVAL / X-PUBLISHED-TTL). */
const REFRESH_SECONDS = 15 * 60;

/**
 * An RFC 5545 calendar named after the user, one VEVENT per shift, in UTC. Every property is a
 * function of the data (DTSTAMP is the shift's last change, not "now"), so the same data renders
 * the same bytes and the ETag is stable between polls. The feed URL (a credential) is never in it.
 */
export function renderFeed(owner: FeedOwner, shifts: readonly FeedShift[], feedBase: string): RenderedFeed {
  const uidDomain = new URL(feedBase).host || 'calendar-feed';
  const calendar = ical({
    name: `${owner.name} (on-call shifts)`,
    description: `On-call shifts of ${owner.name}`,
    prodId: { company: 'account-access-gateway', product: 'calendar-feed', language: 'EN' },
    ttl: REFRESH_SECONDS,
  });
  let lastModified = owner.updatedAt;
  for (const shift of shifts) {
    if (shift.updatedAt > lastModified) lastModified = shift.updatedAt;
    calendar.createEvent({
      id: `${shift.id}@${uidDomain}`,
      start: shift.startsAt,
      end: shift.endsAt,
      summary: `On call: ${shift.summary}`,
      description: `${owner.name} is on call for ${shift.summary}.`,
      stamp: shift.updatedAt,
      created: shift.createdAt,
      lastModified: shift.updatedAt,
    });
  }
  const body = calendar.toString();
  const etag = `"${createHash('sha256').update(body, 'utf8').digest('base64url').slice(0, 32)}"`;
  // HTTP dates have whole seconds; round down so If-Modified-Since comparisons hold.
  return { body, etag, lastModified: new Date(Math.floor(lastModified.getTime() / 1000) * 1000) };
}
