import type { EntityManager } from '@mikro-orm/sql';
import type { PublicUrls } from '../http/runtime.js';
import { policy } from '../auth/policy.js';
import type { Principal } from '../auth/principal.js';
import { PUBLIC_ID_PATTERN } from '../db/public-id.js';
import { InvalidInputError, MissingArgumentError, NotFoundError } from '../errors/domain-errors.js';
import { auditBodyOf, type AuditRecordBody, type StoredReference } from './audit-record.js';
import { MALFORMED_ACTION } from './stored-record.js';
import { graphqlFieldName } from './audit-field-names.js';
import { recordsOfRoot, selectRecords, type AuditRow, type RecordSelection } from './audit-batches.js';

export type { AuditRow } from './audit-batches.js';

export const MAX_AUDIT_PAGE_SIZE = 100;
export const DEFAULT_AUDIT_WINDOW_MS = 24 * 3_600_000;
export const MAX_AUDIT_WINDOW_MS = 31 * 24 * 3_600_000;

/** Which records, whatever their time: what a live stream of appended records can filter on. */
export interface AuditMatch {
  /** Plural resource types, as the public API names them (`users`). */
  rootResourceTypes?: readonly string[] | null;
  actorType?: string | null;
  actorId?: string | null;
  methodType?: string | null;
  methodTruncatedToken?: string | null;
  actions?: readonly string[] | null;
  /** Only records whose root resource is this user. */
  userId?: string | null;
}

export interface AuditFilter extends AuditMatch {
  since?: Date | null;
  until?: Date | null;
}

export interface AuditAppended {
  records: PresentedAuditRecord[];
  /** The position the next read continues after. */
  through: number;
  /** More records matched than were returned: read again from `through`. */
  more: boolean;
}

export interface AuditPageRequest {
  first: number;
  /** The last record of the previous page: the next page is older. */
  after?: { executionTime: Date; position: number };
}

export interface PresentedReference {
  /** The live resource's id (what REST presents as `id`). */
  id: string;
  /** Unique to this reference of this record: a snapshot never shares a client cache's identity with the live object. */
  referenceId: string;
  type: string;
  summary: string | null;
  self: string | null;
  htmlUrl: string | null;
}

/** A record as both faces present it. */
export interface PresentedAuditRecord {
  id: string;
  position: number;
  self: string | null;
  executionTime: Date;
  executionContext: AuditRecordBody['executionContext'];
  actors: PresentedReference[];
  method: AuditRecordBody['method'];
  rootResource: PresentedReference;
  action: string;
  /** Why the stored record is not what the server writes; null for every record it wrote. */
  malformed: string | null;
  details: {
    resource: PresentedReference;
    fields: AuditRecordBody['details']['fields'];
    references: Array<{ name: string; added: PresentedReference[] | null; removed: PresentedReference[] | null }>;
  };
}

export interface AuditPage {
  items: PresentedAuditRecord[];
  hasNextPage: boolean;
}

/** The window a read covers, as the reference has it: `until` defaults to now, `since` to 24 hours before `until`; at most 31 days, `since` before `until`. */
export function auditWindow(filter: Pick<AuditFilter, 'since' | 'until'>, now = new Date()): { since: Date; until: Date } {
  const until = filter.until ?? now;
  const since = filter.since ?? new Date(until.getTime() - DEFAULT_AUDIT_WINDOW_MS);
  if (since.getTime() > until.getTime()) throw new InvalidInputError('since must not be after until');
  if (until.getTime() - since.getTime() > MAX_AUDIT_WINDOW_MS) throw new InvalidInputError('the window from since to until may not exceed 31 days');
  return { since, until };
}

export const RESOURCE_TYPE_PATTERN = /^[a-z][a-z_]{0,62}s$/;

/**
 * The filters of a read, past the window: who acted and how are the same for every record of a
 * batch (SQL on the batch's context); actions and root types are each record's, and a batch listing
 * none of them is skipped. Bad filters are refused here, before any read.
 */
export function auditSelection(filter: AuditMatch): RecordSelection {
  if (filter.actorId && !filter.actorType) throw new MissingArgumentError('actor_id must be qualified by actor_type');
  if (filter.methodTruncatedToken && !filter.methodType) throw new MissingArgumentError('method_truncated_token must be qualified by method_type');
  const batchConditions: string[] = [];
  const batchParams: unknown[] = [];
  let rootTypes: Set<string> | undefined;
  if (filter.rootResourceTypes?.length) {
    const bad = filter.rootResourceTypes.filter((type) => !RESOURCE_TYPE_PATTERN.test(type));
    if (bad.length) throw new InvalidInputError('root_resource_types[] takes plural resource type names such as users');
    rootTypes = new Set(filter.rootResourceTypes.map((type) => type.slice(0, -1)));
    batchConditions.push('b.record_root_types && array[?]::text[]');
    batchParams.push([...rootTypes]);
  }
  if (filter.actorType) {
    // Any of the record's actors: a user acting through a key is found by the user and by the key.
    batchConditions.push(`b.context::jsonb -> 'actors' @> ?::jsonb`);
    batchParams.push(JSON.stringify([{ type: filter.actorType, ...(filter.actorId ? { id: filter.actorId } : {}) }]));
  }
  if (filter.methodType) {
    batchConditions.push(`b.context::jsonb -> 'method' ->> 'type' = ?`);
    batchParams.push(filter.methodType);
  }
  if (filter.methodTruncatedToken) {
    batchConditions.push(`b.context::jsonb -> 'method' ->> 'truncatedToken' = ?`);
    batchParams.push(filter.methodTruncatedToken);
  }
  let actions: Set<string> | undefined;
  if (filter.actions?.length) {
    actions = new Set(filter.actions);
    // A malformed record's batch lists whatever its writer put there: asked for, every batch is looked into.
    if (!actions.has(MALFORMED_ACTION)) {
      batchConditions.push('b.actions && array[?]::text[]');
      batchParams.push([...actions]);
    }
  }
  const userId = filter.userId ?? undefined;
  if (userId !== undefined) {
    batchConditions.push('? = any(b.record_root_ids)');
    batchParams.push(userId);
  }
  return {
    batchConditions,
    batchParams,
    keeps: (element) => (!actions || actions.has(element[1])) && (!rootTypes || rootTypes.has(element[2])) && (userId === undefined || (element[2] === 'user' && element[3] === userId)),
  };
}

/** Audit records of the caller's account, newest first; the account's trail for account admins, a user's own for themself or can_update_user (docs/audit.md). */
export class AuditRecordsService {
  constructor(
    private readonly em: EntityManager,
    private readonly principal: Principal,
    private readonly urls: PublicUrls,
  ) {}

  /** Every record of the account matching the filter (owners, admins, full-access account keys: declared on the schema). */
  async list(filter: AuditFilter, page: AuditPageRequest): Promise<AuditPage> {
    const selection = auditSelection(filter);
    // Chain order is commit order per account (the chain head's lock), and times never go back
    // along it, so records committed while a client pages are all newer than its cursor: pages
    // neither repeat nor skip.
    const { rows, more } = await selectRecords(this.em, this.principal.accountId, {
      selection,
      wanted: page.first,
      window: auditWindow(filter),
      newestFirst: true,
      before: page.after,
    });
    return { items: rows.map((row) => presentAuditRow(row, this.urls)), hasNextPage: more };
  }

  /**
   * Who may follow a stream of the account's records: a user's own records to the user themself or
   * can_update_user (an unknown user is not found), the account's to can_update_user.
   */
  async assertMayFollow(filter: AuditMatch): Promise<void> {
    if (!filter.userId) {
      policy.assertCanUpdateUsers(this.principal);
      return;
    }
    policy.assertSelfOrCanUpdateUser(this.principal, filter.userId);
    await this.assertUserOfAccount(filter.userId);
  }

  private async assertUserOfAccount(userId: string): Promise<void> {
    const [user] = PUBLIC_ID_PATTERN.test(userId)
      ? await this.em.execute<{ id: string }[]>('select id from users where id = ? and account_id = ?', [userId, this.principal.accountId])
      : [];
    if (!user) throw new NotFoundError('user');
  }

  /** Where the account's chain ends now: a stream of appended records starts after it. */
  async lastPosition(): Promise<number> {
    const [head] = await this.em.execute<Array<{ position: string | number }>>('select position from audit_chain_heads where account_id = ?', [this.principal.accountId]);
    return head ? Number(head.position) : 0;
  }

  /**
   * The records appended after `position` matching the filter, in chain order, at most `limit`;
   * `through` is where the next call continues (past records the filter left out too). Positions
   * are handed out under the chain head's lock and committed in their order, so every record up to
   * the head read here has committed: a reader continuing from `through` neither skips nor repeats.
   */
  async appendedAfter(position: number, filter: AuditMatch, limit: number): Promise<AuditAppended> {
    const selection = auditSelection(filter);
    const head = await this.lastPosition();
    if (head <= position) return { records: [], through: position, more: false };
    const { rows, more } = await selectRecords(this.em, this.principal.accountId, { selection, wanted: limit, newestFirst: false, after: position, through: head });
    const records = rows.map((row) => presentAuditRow(row, this.urls));
    return { records, through: more ? records.at(-1)!.position : head, more };
  }

  /** The records of changes made to one user (themself, or can_update_user); a deleted user's stay readable. */
  async listForUser(userId: string, filter: Pick<AuditFilter, 'since' | 'until'>, page: AuditPageRequest): Promise<AuditPage> {
    policy.assertSelfOrCanUpdateUser(this.principal, userId);
    const window = auditWindow(filter);
    await this.assertUserOfAccount(userId);
    const { rows, more } = await recordsOfRoot(this.em, this.principal.accountId, 'user', userId, { wanted: page.first, window, before: page.after });
    return { items: rows.map((row) => presentAuditRow(row, this.urls)), hasNextPage: more };
  }
}

/** A stored record as both faces (and the export) present it. */
export function presentAuditRow(row: AuditRow, urls: PublicUrls): PresentedAuditRecord {
  const body = auditBodyOf(row.body);
  const ref = (slot: string) => (item: StoredReference, index?: number) => presentReference(item, urls, `${row.id}:${slot}${index === undefined ? '' : `.${index}`}`);
  return {
    id: row.id,
    position: Number(row.position),
    self: null,
    executionTime: new Date(row.execution_time),
    executionContext: body.executionContext,
    actors: body.actors.map(ref('actors')),
    method: body.method,
    rootResource: ref('rootResource')(body.rootResource),
    action: row.action,
    malformed: row.malformed,
    details: {
      resource: ref('resource')(body.details.resource),
      fields: body.details.fields.map((field) => ({ ...field, name: graphqlFieldName(field.name) })),
      references: body.details.references.map((group, at) => ({
        name: group.name,
        added: group.added?.map(ref(`references.${at}.added`)) ?? null,
        removed: group.removed?.map(ref(`references.${at}.removed`)) ?? null,
      })),
    },
  };
}

/** Users have API and web URLs; the other referenced resources have no show route of their own. */
function presentReference(item: StoredReference, urls: PublicUrls, referenceId: string): PresentedReference {
  const isUser = item.type === 'user_reference';
  return {
    id: item.id,
    referenceId,
    type: item.type,
    summary: item.summary ?? null,
    self: isUser ? `${urls.api}/users/${item.id}` : null,
    htmlUrl: isUser ? `${urls.web}/users/${item.id}` : null,
  };
}
