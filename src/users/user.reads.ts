import { isUserPrincipal, type Principal } from '../auth/principal.js';
import { escapeLike, isoTimestamp, toDate, type ReadPath } from '../db/read-path.js';
import { PUBLIC_ID_PATTERN } from '../db/public-id.js';
import { InvalidInputError, NotFoundError } from '../errors/domain-errors.js';
import type { UserFields } from './user.validation.js';

/**
 * A user as the presenting reads return it: a plain object with the `User` GraphQL type's field
 * names, holding only the columns the request selected (always `id` and `name`).
 */
export interface UserRow extends UserFields {
  id: string;
  name: string;
  avatarUrl?: string | null;
  invitationSent?: boolean;
  createdViaSso?: boolean;
  createdAt?: Date;
}

/** GraphQL field -> column. Fields not listed here (self, htmlUrl, other features' fields) need only `id`. */
const USER_COLUMNS: Record<keyof UserRow, string> = {
  id: 'id',
  name: 'name',
  email: 'email',
  timeZone: 'time_zone',
  color: 'color',
  role: 'role',
  description: 'description',
  jobTitle: 'job_title',
  avatarUrl: 'avatar_url',
  invitationSent: 'invitation_sent',
  createdViaSso: 'created_via_sso',
  createdAt: 'created_at',
};
const TIMESTAMP_FIELDS = new Set<string>(['createdAt']);

/** The select list for the selected fields, aliased to the GraphQL names. */
export function userSelectList(fields: Iterable<string>): string {
  const wanted = new Set<string>(['id', 'name']);
  for (const field of fields) if (field in USER_COLUMNS) wanted.add(field);
  return [...wanted].map((field) => {
    const column = USER_COLUMNS[field as keyof UserRow];
    if (TIMESTAMP_FIELDS.has(field)) return isoTimestamp(column, field);
    return column === field ? column : `${column} as "${field}"`;
  }).join(', ');
}

export interface UserListOptions {
  query?: string | null;
  first: number;
  offset?: number;
  after?: { name: string; id: string };
}

export interface UserRowPage {
  items: UserRow[];
  hasNextPage: boolean;
  countTotal: () => Promise<number>;
}

/**
 * Terms of one or two characters have no trigram of their own; the `users_search_short_terms_idx`
 * index (Migration20261122001000) indexes every character of name and email tripled, so "zq"
 * becomes the trigram-searchable "zzzqqq" (see README, "Searching users").
 */
const SHORT_TERM_LENGTH = 2;
const SHORT_TERM_CONDITION = `aag_search_tripled(name || ' ' || email) like '%' || replace(replace(replace(aag_search_tripled(?), '\\', '\\\\'), '%', '\\%'), '_', '\\_') || '%'`;

/** Presenting reads of users: list, show, viewer and counts, as plain rows (see src/db/read-path.ts). */
export class UserReads {
  constructor(
    private readonly reads: ReadPath,
    private readonly principal: Principal,
  ) {}

  private async rows(sql: string, params: unknown[], options: { replica?: boolean } = {}): Promise<UserRow[]> {
    const rows = await this.reads.rows<UserRow>(sql, params, options);
    for (const row of rows) if (row.createdAt !== undefined) row.createdAt = toDate(row.createdAt);
    return rows;
  }

  /** A live user of the caller's account; another account's id is indistinguishable from a missing one. */
  async get(id: string, fields: Iterable<string>): Promise<UserRow> {
    const [user] = PUBLIC_ID_PATTERN.test(id)
      ? await this.rows(
          `select ${userSelectList(fields)} from users where id = ? and account_id = ? and deleted_at is null`,
          [id, this.principal.accountId],
        )
      : [];
    if (!user) throw new NotFoundError('user');
    return user;
  }

  viewer(fields: Iterable<string>): Promise<UserRow> {
    if (!isUserPrincipal(this.principal)) {
      throw new InvalidInputError('This request requires user-level credentials (a user API key or OAuth token); an account API key has no current user.');
    }
    return this.get(this.principal.userId, fields);
  }

  /**
   * One page in (name, id) order: one statement for the rows, and one count only when
   * `countTotal` is called (a client selected `totalCount`). Listings may read from a replica.
   */
  async list(options: UserListOptions, fields: Iterable<string>): Promise<UserRowPage> {
    const conditions = ['account_id = ?', 'deleted_at is null'];
    const params: unknown[] = [this.principal.accountId];
    const term = options.query?.trim();
    if (term) {
      const pattern = `%${escapeLike(term)}%`;
      conditions.push('(name ilike ? or email ilike ?)');
      params.push(pattern, pattern);
      if ([...term].length <= SHORT_TERM_LENGTH) {
        conditions.push(SHORT_TERM_CONDITION);
        params.push(term);
      }
    }
    const filter = conditions.join(' and ');
    const filterParams = [...params];
    if (options.after) {
      conditions.push('(name, id) > (?, ?)');
      params.push(options.after.name, options.after.id);
    }
    const rows = await this.rows(
      `select ${userSelectList(fields)} from users where ${conditions.join(' and ')} order by name, id limit ? offset ?`,
      [...params, options.first + 1, options.after ? 0 : options.offset ?? 0],
      { replica: true },
    );
    return {
      items: rows.slice(0, options.first),
      hasNextPage: rows.length > options.first,
      countTotal: () => this.reads.count(`select count(*) as n from users where ${filter}`, filterParams, { replica: true }),
    };
  }
}
