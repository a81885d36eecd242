import { OptionalProps } from '@mikro-orm/core';
import { Entity, PrimaryKey, Property } from '@mikro-orm/decorators/legacy';

/**
 * A user's private calendar key, kept in the feature's own table (one row per user, created at
 * first use). The key itself is never stored: it is re-derived as HMAC(server secret, user id and
 * `nonce`) when it has to be shown, and a feed request is looked up by `keyDigest` (SHA-256 of the
 * key). A database dump therefore yields no working feed URL.
 */
@Entity({ tableName: 'calendar_feed_keys' })
export class CalendarFeedKey {
  [OptionalProps]?: 'createdAt' | 'rotatedAt';

  /** A plain column rather than a relation: the users feature owns users. */
  @PrimaryKey({ type: 'string', length: 7, fieldName: 'user_id' })
  userId!: string;

  @Property({ type: 'string', length: 64, hidden: true })
  nonce!: string;

  @Property({ type: 'string', length: 64, unique: 'calendar_feed_keys_digest_uniq', hidden: true })
  keyDigest!: string;

  @Property({ type: 'Date', columnType: 'timestamptz' })
  createdAt: Date = new Date();

  @Property({ type: 'Date', columnType: 'timestamptz' })
  rotatedAt: Date = new Date();
}
