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

/** Rows selected with `userSelectList`, as the GraphQL `User` type's resolvers take them. */
export async function userRows(selected: Promise<UserRow[]>): Promise<UserRow[]> {
  const rows = await selected;
  for (const row of rows) if (row.createdAt !== undefined) row.createdAt = toDate(row.createdAt);
  return rows;
}

export interface UserListOptions {
  query?: string | null;
  first: number;
  offset?: number;
  after?: { name: string; id: string };
}

/** A page whose statements run only when asked: the rows for nodes/edges/pageInfo, the count for totalCount. */
export interface UserRowPage {
  slice(): Promise<{ items: UserRow[]; hasNextPage: boolean }>;
  countTotal(): Promise<number>;
}

/**
 * How a search page is found (README, "Searching users"). First a bounded walk of the name order
 * (the first SEARCH_WALK_ROWS live users): a term matching densely fills the page there, in at most
 * that many rows at any table size. Otherwise the trigram index counts the matches (up to
 * SEARCH_MAX_SORTED_MATCHES + 1): up to that many, it finds them all and only they are ordered;
 * beyond, the name order is walked until the page is full. Both are exact: the walk tests
 * `ILIKE` on name and email; the index condition is the same test on `name || chr(1) || email`
 * (chr(1) cannot occur in a term, so no match spans both), and for terms of one or two characters
 * on that string with every character tripled, where "zq" occurs exactly when "zzzqqq" does.
 */
export const SEARCH_WALK_ROWS = 500;
/** Above this many matches (counted through the index, up to one more) the matches are not sorted: the name order is walked. */
export const SEARCH_MAX_SORTED_MATCHES = 5000;
const SEARCH_TEXT = 'lower(name || chr(1) || email)';
/** Must stay the expression of `users_search_short_terms_idx`, character for character. */
const tripled = (text: string) => `regexp_replace(${text}, '(.)', '\\1\\1\\1', 'g')`;
/** A LIKE pattern built in SQL, so the term is lower-cased by the same lower() as the index. */
const likePattern = (term: string) => `'%' || replace(replace(replace(${term}, '\\', '\\\\'), '%', '\\%'), '_', '\\_') || '%'`;

function indexedCondition(term: string): { sql: string; params: unknown[] } {
  if (term.includes('\u0001')) {
    const pattern = `%${escapeLike(term)}%`;
    return { sql: '(name ilike ? or email ilike ?)', params: [pattern, pattern] };
  }
  if ([...term].length <= 2) {
    return { sql: `${tripled(SEARCH_TEXT)} like ${likePattern(tripled('lower(?)'))}`, params: [term] };
  }
  return { sql: `${SEARCH_TEXT} like ${likePattern('lower(?)')}`, params: [term] };
}

type Statement = { sql: string; params: unknown[] };

/**
 * The statements of one listing page. Without a term: the page. With one: the bounded walk, and
 * the indexed search when the walk does not fill the page. `count` runs only when `totalCount` is
 * selected. Each reads `first + 1` rows, so `hasNextPage` needs no count. Exported so the
 * benchmark can EXPLAIN exactly what runs.
 */
export function userListStatements(
  accountId: string,
  options: UserListOptions,
  fields: Iterable<string>,
): { walk?: Statement; probe?: Statement; scan?: Statement; page: Statement; count: Statement } {
  const columns = userSelectList(fields);
  const live = 'account_id = ? and deleted_at is null';
  const after = options.after ? ' and (name, id) > (?, ?)' : '';
  const afterParams = options.after ? [options.after.name, options.after.id] : [];
  const window = [options.first + 1, options.after ? 0 : options.offset ?? 0];
  const term = options.query?.trim();
  if (!term) {
    return {
      page: { sql: `select ${columns} from users where ${live}${after} order by name, id limit ? offset ?`, params: [accountId, ...afterParams, ...window] },
      count: { sql: `select count(*) as n from users where ${live}`, params: [accountId] },
    };
  }
  const pattern = `%${escapeLike(term)}%`;
  const indexed = indexedCondition(term);
  return {
    walk: {
      sql: `select ${columns} from (select * from users where ${live}${after} order by name, id limit ?) walked
             where name ilike ? or email ilike ? order by name, id limit ? offset ?`,
      params: [accountId, ...afterParams, SEARCH_WALK_ROWS, pattern, pattern, ...window],
    },
    probe: {
      sql: `select count(*) as n from (select 1 from users where ${live}${after} and ${indexed.sql} limit ?) candidates`,
      params: [accountId, ...afterParams, ...indexed.params, SEARCH_MAX_SORTED_MATCHES + 1],
    },
    scan: {
      sql: `select ${columns} from users where ${live}${after} and (name ilike ? or email ilike ?) order by name, id limit ? offset ?`,
      params: [accountId, ...afterParams, pattern, pattern, ...window],
    },
    // Materialized: the planner finds the matches through the index, then orders only them.
    page: {
      sql: `with matches as materialized (select ${columns} from users where ${live}${after} and ${indexed.sql})
            select * from matches order by name, id limit ? offset ?`,
      params: [accountId, ...afterParams, ...indexed.params, ...window],
    },
    count: { sql: `select count(*) as n from users where ${live} and ${indexed.sql}`, params: [accountId, ...indexed.params] },
  };
}

/** Presenting reads of users: list, show, viewer and counts, as plain rows (see src/db/read-path.ts). */
export class UserReads {
  constructor(
    private readonly reads: ReadPath,
    private readonly principal: Principal,
  ) {}

  private rows(sql: string, params: unknown[], options: { replica?: boolean } = {}): Promise<UserRow[]> {
    return userRows(this.reads.rows<UserRow>(sql, params, options));
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
   * One page in (name, id) order (userListStatements); nothing runs until the connection's fields
   * ask for rows or the count. Listings may read from a replica.
   */
  list(options: UserListOptions, fields: Iterable<string>): UserRowPage {
    const statement = userListStatements(this.principal.accountId, options, fields);
    return {
      slice: async () => {
        const read = (step: Statement) => this.rows(step.sql, step.params, { replica: true });
        let rows = statement.walk ? await read(statement.walk) : [];
        if (statement.walk && rows.length > options.first) return { items: rows.slice(0, options.first), hasNextPage: true };
        // Many matches, but not among the first rows: walking the name order costs less than sorting them all.
        const many = statement.probe && statement.scan && (await this.reads.count(statement.probe.sql, statement.probe.params, { replica: true })) > SEARCH_MAX_SORTED_MATCHES;
        rows = await read(many ? statement.scan! : statement.page);
        return { items: rows.slice(0, options.first), hasNextPage: rows.length > options.first };
      },
      countTotal: () => this.reads.count(statement.count.sql, statement.count.params, { replica: true }),
    };
  }
}
