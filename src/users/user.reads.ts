import { isUserPrincipal, type Principal } from '../auth/principal.js';
import { toDate, type ReadOptions, type ReadPath } from '../db/read-path.js';
import { PUBLIC_ID_PATTERN } from '../db/public-id.js';
import { InvalidInputError, NotFoundError } from '../errors/domain-errors.js';
import type { Statement } from './search/search-conditions.js';
import { readUserSlice, type UserSlice } from './search/search-page.js';
import { userListStatements, type UserListOptions } from './search/user-list-statements.js';
import { LIVE_USER, statementTextForColumns, userSelectList } from './user.sql.js';
import type { UserFields } from './user.validation.js';

// The search's entry points, for the benchmark and tests that import them from here.

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
  updatedAt?: Date;
  /** False while suspended. */
  active?: boolean;
  /** Changes with every change of the row (updated_at in microseconds): an optimistic-concurrency token. */
  version?: string;
}

/** A page whose statements run only when asked: the rows for nodes/edges/pageInfo, the count for totalCount. */
export interface UserRowPage {
  slice(): Promise<UserSlice>;
  countTotal(): Promise<number>;
}

const showTexts = new Map<string, string>();

/** Rows selected with `userSelectList`, as the GraphQL `User` type's resolvers take them. */
export async function userRows(selected: Promise<UserRow[]>): Promise<UserRow[]> {
  const rows = await selected;
  for (const row of rows) {
    if (row.createdAt !== undefined) row.createdAt = toDate(row.createdAt);
    if (row.updatedAt !== undefined) row.updatedAt = toDate(row.updatedAt);
  }
  return rows;
}

/** Presenting reads of users: list, show, viewer and counts, as plain rows (see src/db/read-path.ts). */
export class UserReads {
  constructor(
    private readonly reads: ReadPath,
    private readonly principal: Principal,
  ) {}

  private rows(sql: string, params: unknown[], options: ReadOptions = {}): Promise<UserRow[]> {
    return userRows(this.reads.rows<UserRow>(sql, params, options));
  }

  /**
   * A live user of the caller's account; another account's id is indistinguishable from a missing
   * one. A presenting read: a replica may serve it (never to the credential that just wrote).
   */
  get(id: string, fields: Iterable<string>): Promise<UserRow> {
    return this.liveUserById(id, fields, { replica: true });
  }

  /**
   * The caller's own user, from the primary: authentication has just found it there, and a replica
   * that has not replayed a new user yet must not answer that the signed-in user does not exist.
   */
  viewer(fields: Iterable<string>): Promise<UserRow> {
    if (!isUserPrincipal(this.principal)) {
      throw new InvalidInputError('This request requires user-level credentials (a user API key or OAuth token); an account API key has no current user.');
    }
    return this.liveUserById(this.principal.userId, fields, { replica: false });
  }

  /** The live user `id` of the caller's account with the selected fields, or NotFoundError. */
  private async liveUserById(id: string, fields: Iterable<string>, options: { replica: boolean }): Promise<UserRow> {
    const [user] = PUBLIC_ID_PATTERN.test(id)
      ? await this.rows(
          statementTextForColumns(showTexts, userSelectList(fields), (columns) => `select ${columns} from users where id = ? and account_id = ? and ${LIVE_USER}`),
          [id, this.principal.accountId],
          { ...options, prepared: true },
        )
      : [];
    if (!user) throw new NotFoundError('user');
    return user;
  }

  /**
   * One page in (name, id) order (userListStatements); nothing runs until the connection's fields
   * ask for rows or the count. A replica may serve them.
   */
  list(options: UserListOptions, fields: Iterable<string>): UserRowPage {
    const statement = userListStatements(this.principal.accountId, options, fields);
    return {
      slice: () => readUserSlice(this.reads, statement, options, (step: Statement) => this.rows(step.sql, step.params, { replica: true, prepared: step.prepared })),
      countTotal: () => this.reads.count(statement.count.sql, statement.count.params, { replica: true, prepared: statement.count.prepared }),
    };
  }
}
