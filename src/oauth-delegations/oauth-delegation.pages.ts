import type { FilterQuery } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/sql';
import { OAuthDelegation, type DelegationStatus, type DelegationType } from './oauth-delegation.entity.js';

export const MAX_DELEGATION_PAGE_SIZE = 100;

export interface DelegationFilter {
  types?: readonly DelegationType[] | null;
  statuses?: readonly DelegationStatus[] | null;
}

/** A keyset position in the (created_at desc, id desc) order. */
export interface DelegationPosition {
  createdAt: Date;
  id: string;
}

export interface DelegationPageRequest extends DelegationFilter {
  first: number;
  after?: DelegationPosition;
}

export interface DelegationPage {
  items: OAuthDelegation[];
  hasNextPage: boolean;
  countTotal: () => Promise<number>;
}

interface DelegationRow {
  id: string;
  account_id: string;
  user_id: string;
  delegation_type: string;
  client_id: string;
  client_name: string | null;
  scope: string;
  status: string;
  created_at: Date | string;
  expires_at: Date | string;
  revoked_at: Date | string | null;
  revoked_by_kind: string | null;
  revoked_by_credential_id: string | null;
  revocation_reason: string | null;
}

/** Every column but the token digest, which never leaves the database on a read. */
const PUBLIC_COLUMNS = 'id, account_id, user_id, delegation_type, client_id, client_name, scope, status, created_at, expires_at, revoked_at, revoked_by_kind, revoked_by_credential_id, revocation_reason';

/**
 * One page per user in one query (a LATERAL join walks each user's index), so a list of users
 * with their delegations costs one statement. Callers check access to each user first.
 */
export async function delegationPagesForUsers(em: EntityManager, accountId: string, userIds: readonly string[], request: DelegationPageRequest): Promise<Map<string, DelegationPage>> {
  if (userIds.length === 0) return new Map();
  // Plain placeholders (no array parameters): the drivers differ in how they bind arrays.
  const placeholders = (values: readonly unknown[]) => values.map(() => '?').join(', ');
  const conditions = ['d.user_id = u.id', 'd.account_id = ?'];
  const params: unknown[] = [...userIds, accountId];
  if (request.types?.length) {
    conditions.push(`d.delegation_type in (${placeholders(request.types)})`);
    params.push(...request.types);
  }
  if (request.statuses?.length) {
    conditions.push(`d.status in (${placeholders(request.statuses)})`);
    params.push(...request.statuses);
  }
  if (request.after) {
    conditions.push('(d.created_at, d.id) < (?::timestamptz, ?::uuid)');
    params.push(request.after.createdAt.toISOString(), request.after.id);
  }
  params.push(request.first + 1);
  const rows = await em.execute<DelegationRow[]>(
    `select d.${PUBLIC_COLUMNS.split(', ').join(', d.')}
         from (values ${userIds.map(() => '(?::varchar)').join(', ')}) as u(id)
         cross join lateral (
           select ${PUBLIC_COLUMNS} from oauth_delegations d
            where ${conditions.join(' and ')}
            order by d.created_at desc, d.id desc
            limit ?
         ) d`,
    params,
  );
  const byUser = new Map<string, OAuthDelegation[]>(userIds.map((id) => [id, []]));
  for (const row of rows) byUser.get(row.user_id)?.push(em.map(OAuthDelegation, row as unknown as Record<string, unknown>));
  const pages = new Map<string, DelegationPage>();
  for (const [userId, found] of byUser) {
    found.sort(newestFirst);
    pages.set(userId, {
      items: found.slice(0, request.first),
      hasNextPage: found.length > request.first,
      countTotal: () => em.count(OAuthDelegation, filterFor(accountId, userId, request)),
    });
  }
  return pages;
}

function filterFor(accountId: string, userId: string, filter: DelegationFilter): FilterQuery<OAuthDelegation> {
  const where: FilterQuery<OAuthDelegation> = { account: accountId, userId };
  if (filter.types?.length) where.delegationType = { $in: [...filter.types] };
  if (filter.statuses?.length) where.status = { $in: [...filter.statuses] };
  return where;
}

function newestFirst(a: OAuthDelegation, b: OAuthDelegation): number {
  const byTime = b.createdAt.getTime() - a.createdAt.getTime();
  if (byTime !== 0) return byTime;
  return a.id < b.id ? 1 : a.id > b.id ? -1 : 0;
}
