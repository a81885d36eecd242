import type { EntityManager } from '@mikro-orm/sql';
import { PUBLIC_ID_PATTERN } from '../db/public-id.js';
import { InvalidInputError, NotFoundError } from '../errors/domain-errors.js';
import { User } from '../users/user.entity.js';
import { OnCallShift } from './oncall-shift.entity.js';

/** The feed shows shifts that ended at most this long ago, and everything after. */
export const FEED_HISTORY_DAYS = 90;
/** A calendar app gets at most this many shifts per poll. */
export const FEED_MAX_SHIFTS = 1000;

export interface ShiftFields {
  userId: string;
  startsAt: Date;
  endsAt: Date;
  summary: string;
}

export interface FeedShift {
  id: string;
  startsAt: Date;
  endsAt: Date;
  summary: string;
  createdAt: Date;
  updatedAt: Date;
}

export class OnCallShiftsService {
  constructor(private readonly em: EntityManager) {}

  /** Operators add shifts with the CLI (`accessctl shifts add`); schedules are outside this product. */
  async add(fields: ShiftFields): Promise<OnCallShift> {
    const problems: string[] = [];
    if (Number.isNaN(fields.startsAt.getTime())) problems.push('start must be an ISO 8601 date-time');
    if (Number.isNaN(fields.endsAt.getTime())) problems.push('end must be an ISO 8601 date-time');
    if (!problems.length && fields.endsAt <= fields.startsAt) problems.push('end must be after start');
    const summary = fields.summary.trim();
    if (summary === '' || summary.length > 255) problems.push('summary must be 1 to 255 characters');
    if (problems.length) throw new InvalidInputError(problems);
    const user = PUBLIC_ID_PATTERN.test(fields.userId) ? await this.em.findOne(User, { id: fields.userId, deletedAt: null }) : null;
    if (!user) throw new NotFoundError('user');
    const shift = this.em.create(OnCallShift, { userId: user.id, startsAt: fields.startsAt, endsAt: fields.endsAt, summary });
    await this.em.persist(shift).flush();
    return shift;
  }

  /** What a feed shows: the user's shifts from FEED_HISTORY_DAYS ago on, in start order. */
  async forFeed(userId: string, now: Date = new Date()): Promise<FeedShift[]> {
    const since = new Date(now.getTime() - FEED_HISTORY_DAYS * 24 * 3600 * 1000);
    const rows = await this.em.execute<{ id: string; starts_at: Date | string; ends_at: Date | string; summary: string; created_at: Date | string; updated_at: Date | string }[]>(
      `select id, starts_at, ends_at, summary, created_at, updated_at
         from oncall_shifts
        where user_id = ? and ends_at > ?::timestamptz
        order by starts_at, id
        limit ${FEED_MAX_SHIFTS}`,
      [userId, since.toISOString()],
    );
    return rows.map((row) => ({
      id: row.id,
      startsAt: new Date(row.starts_at),
      endsAt: new Date(row.ends_at),
      summary: row.summary,
      createdAt: new Date(row.created_at),
      updatedAt: new Date(row.updated_at),
    }));
  }
}

const SCHEDULES = ['Primary on-call', 'Secondary on-call', 'Database escalation', 'Platform weekend'];

/**
 * For `accessctl seed`: `perUser` shifts for each of the given (just inserted) users, in one
 * statement: 12-hour shifts on staggered days starting from today, one schedule name each.
 */
export async function seedOnCallShifts(em: EntityManager, userIds: readonly string[], perUser: number): Promise<number> {
  if (perUser < 1 || userIds.length === 0) return 0;
  const result = await em.execute<{ affectedRows?: number }>(
    `insert into oncall_shifts (id, user_id, starts_at, ends_at, summary)
     select gen_random_uuid(), u.id,
            date_trunc('day', now()) + make_interval(days => ((u.n % 7) + g.n * 7)::int, hours => 9),
            date_trunc('day', now()) + make_interval(days => ((u.n % 7) + g.n * 7)::int, hours => 21),
            (array[?]::text[])[1 + ((u.n + g.n) % ?)]
       from unnest(array[?]::text[]) with ordinality as u(id, n)
      cross join generate_series(0, ? - 1) as g(n)`,
    [SCHEDULES, SCHEDULES.length, userIds, perUser],
    'run',
  );
  return result.affectedRows ?? userIds.length * perUser;
}
