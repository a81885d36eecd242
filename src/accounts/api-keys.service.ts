import type { EntityManager } from '@mikro-orm/sql';
import { isUserPrincipal, type Principal } from '../auth/principal.js';
import { policy } from '../auth/policy.js';
import { isUserRole, type UserRole } from '../auth/roles.js';
import { mintSecret, type SecretKind } from '../auth/secret-format.js';
import { credentialTail } from '../auth/credentials.js';
import { digestSecret } from '../auth/secrets.js';
import { recordChange } from '../db/change-journal.js';
import { PUBLIC_ID_PATTERN } from '../db/public-id.js';
import type { TransactionRunner } from '../db/transaction.js';
import { InvalidInputError, NotFoundError } from '../errors/domain-errors.js';
import { Account } from './account.entity.js';
import { ApiKey } from './api-key.entity.js';
import { LIVE_USER } from '../users/user.sql.js';

export const API_KEY_KINDS = ['account_full_access', 'account_read_only', 'user'] as const;
export type ApiKeyKind = (typeof API_KEY_KINDS)[number];

export const API_KEY_STATUSES = ['active', 'expired', 'revoked'] as const;
export type ApiKeyStatus = (typeof API_KEY_STATUSES)[number];

/** The longest lifetime a key may be given at creation (docs/security.md, "Credentials"); no `expiresAt` means it never expires. */
export const MAX_API_KEY_LIFETIME_DAYS = 366;
/** A roll keeps the previous key working for at most a week, by default a day. */
export const MAX_ROLL_GRACE_SECONDS = 604_800;
export const DEFAULT_ROLL_GRACE_SECONDS = 86_400;
export const API_KEY_DESCRIPTION_MAX = 255;
export const MAX_API_KEY_PAGE_SIZE = 100;

const SECRET_KIND_OF: Record<ApiKeyKind, SecretKind> = {
  account_full_access: 'accountApiKey',
  account_read_only: 'accountReadOnlyApiKey',
  user: 'userApiKey',
};

export function apiKeyKindOf(key: Pick<ApiKey, 'userId' | 'readOnly'>): ApiKeyKind {
  if (key.userId !== null) return 'user';
  return key.readOnly ? 'account_read_only' : 'account_full_access';
}

export function apiKeyStatusOf(key: Pick<ApiKey, 'revokedAt' | 'expiresAt'>, now: Date = new Date()): ApiKeyStatus {
  if (key.revokedAt) return 'revoked';
  if (key.expiresAt && key.expiresAt.getTime() <= now.getTime()) return 'expired';
  return 'active';
}

export interface IssueApiKeyOptions {
  accountId: string;
  kind: ApiKeyKind;
  userId?: string | null;
  description?: string | null;
  expiresAt?: Date | null;
  /** The user whose credential asks; null for an account key and the operator CLI. */
  createdByUserId?: string | null;
}

export interface IssuedKey {
  apiKey: ApiKey;
  /** Shown once; only its digest is stored. */
  secret: string;
}

function checkDescription(description: string | null | undefined): string | null {
  if (description === undefined || description === null) return null;
  const trimmed = description.trim();
  if (trimmed.length > API_KEY_DESCRIPTION_MAX) throw new InvalidInputError(`description must be at most ${API_KEY_DESCRIPTION_MAX} characters`);
  return trimmed === '' ? null : trimmed;
}

function checkExpiry(expiresAt: Date | null | undefined, now: Date): Date | null {
  if (expiresAt === undefined || expiresAt === null) return null;
  if (Number.isNaN(expiresAt.getTime())) throw new InvalidInputError('expiresAt must be a date-time');
  if (expiresAt.getTime() <= now.getTime()) throw new InvalidInputError('expiresAt must be in the future');
  if (expiresAt.getTime() > now.getTime() + MAX_API_KEY_LIFETIME_DAYS * 86_400_000) {
    throw new InvalidInputError(`expiresAt must be at most ${MAX_API_KEY_LIFETIME_DAYS} days from now`);
  }
  return expiresAt;
}

function checkHolder(kind: ApiKeyKind, userId: string | null | undefined): void {
  if (kind === 'user' && !userId) throw new InvalidInputError('a USER key needs userId');
  if (kind !== 'user' && userId) throw new InvalidInputError('an account key acts for the account: userId applies to USER keys only');
}

/** The live, unsuspended user a user key is for, locked against deletion and suspension until commit. */
async function lockKeyHolder(em: EntityManager, accountId: string, userId: string): Promise<{ id: string; role: UserRole }> {
  const [user] = PUBLIC_ID_PATTERN.test(userId)
    ? await em.execute<{ id: string; role: string; suspended: boolean }[]>(
        `select id, role, suspended_at is not null as suspended from users where id = ? and account_id = ? and ${LIVE_USER} for share`,
        [userId, accountId],
      )
    : [];
  if (!user || !isUserRole(user.role)) throw new NotFoundError('user');
  if (user.suspended) throw new InvalidInputError(`user ${userId} is suspended: a suspended user cannot be given new credentials`);
  return { id: user.id, role: user.role };
}

/** The holder of a key being revoked, whatever their state now (a deleted or suspended user's keys were revoked with them). */
async function keyHolder(em: EntityManager, accountId: string, userId: string): Promise<{ id: string; role: UserRole }> {
  const [user] = await em.execute<{ id: string; role: string }[]>('select id, role from users where id = ? and account_id = ?', [userId, accountId]);
  if (!user || !isUserRole(user.role)) throw new NotFoundError('user');
  return { id: user.id, role: user.role };
}

/**
 * Issues a key in the caller's write transaction and records it. Checks the input, not who asks:
 * the operator CLI calls it directly; API callers go through `ApiKeysService`, which checks rights first.
 */
export async function issueApiKey(em: EntityManager, options: IssueApiKeyOptions): Promise<IssuedKey> {
  const now = new Date();
  if (!(API_KEY_KINDS as readonly string[]).includes(options.kind)) throw new InvalidInputError(`kind must be one of ${API_KEY_KINDS.join(', ')}`);
  const description = checkDescription(options.description);
  const expiresAt = checkExpiry(options.expiresAt, now);
  checkHolder(options.kind, options.userId);
  if (!PUBLIC_ID_PATTERN.test(options.accountId) || !(await em.findOne(Account, { id: options.accountId }))) throw new NotFoundError('account');
  if (options.userId) await lockKeyHolder(em, options.accountId, options.userId);
  const secret = mintSecret(SECRET_KIND_OF[options.kind]);
  const key = em.create(ApiKey, {
    account: em.getReference(Account, options.accountId),
    userId: options.userId ?? null,
    readOnly: options.kind === 'account_read_only',
    tokenDigest: digestSecret(secret),
    tokenTail: credentialTail(secret),
    description,
    expiresAt,
    createdByUserId: options.createdByUserId ?? null,
  });
  await em.persist(key).flush();
  recordChange(em, {
    accountId: options.accountId,
    action: 'create',
    resource: { type: 'api_key', id: key.id, ...(description ? { summary: description } : {}) },
    ...(key.userId ? { userId: key.userId } : {}),
    fields: [
      { name: 'read_only', value: key.readOnly },
      { name: 'kind', value: options.kind },
      ...(description ? [{ name: 'description', value: description }] : []),
      ...(expiresAt ? [{ name: 'expires_at', value: expiresAt.toISOString() }] : []),
    ],
  });
  return { apiKey: key, secret };
}

/** Revokes a key (if still live) in the caller's write transaction; its holder is refused from the commit on, on every instance and open socket. */
export async function revokeApiKeyRow(em: EntityManager, key: ApiKey, at: Date = new Date()): Promise<ApiKey> {
  if (key.revokedAt) return key;
  const [row] = await em.execute<{ revoked_at: Date | string }[]>(
    'update api_keys set revoked_at = ? where id = ? and revoked_at is null returning revoked_at',
    [at, key.id],
  );
  if (!row) return (await em.refresh(key)) ?? key;
  key.revokedAt = new Date(row.revoked_at);
  recordChange(em, {
    accountId: key.account.id,
    action: 'revoke',
    resource: { type: 'api_key', id: key.id, ...(key.description ? { summary: key.description } : {}) },
    ...(key.userId ? { userId: key.userId } : {}),
    revokesAccess: true,
  });
  return key;
}

/**
 * Ends a key's grace: it stops working at `until` (or at once), whichever of that and its own
 * expiry comes first.
 */
async function shortenApiKey(em: EntityManager, key: ApiKey, until: Date): Promise<ApiKey> {
  const endsAt = key.expiresAt && key.expiresAt.getTime() < until.getTime() ? key.expiresAt : until;
  key.expiresAt = endsAt;
  await em.execute('update api_keys set expires_at = ? where id = ?', [endsAt, key.id]);
  recordChange(em, {
    accountId: key.account.id,
    action: 'update',
    resource: { type: 'api_key', id: key.id, ...(key.description ? { summary: key.description } : {}) },
    ...(key.userId ? { userId: key.userId } : {}),
    fields: [{ name: 'expires_at', value: endsAt.toISOString() }],
    // Access now ends at a known time: open sockets re-check the key and close at that time (or now).
    revokesAccess: true,
  });
  return key;
}

export interface RolledKey extends IssuedKey {
  previous: ApiKey;
}

function checkGrace(previousExpiresIn: number): void {
  if (!Number.isInteger(previousExpiresIn) || previousExpiresIn < 0 || previousExpiresIn > MAX_ROLL_GRACE_SECONDS) {
    throw new InvalidInputError(`previousExpiresIn must be a whole number of seconds from 0 to ${MAX_ROLL_GRACE_SECONDS}`);
  }
}

/**
 * A replacement with the same kind, user, description and expiry (rolling changes the secret, never
 * how long access lasts); the previous key keeps working for `previousExpiresIn` seconds. In the
 * caller's write transaction; rights are the caller's to check (the operator CLI has them all).
 */
export async function rollApiKeyRow(tx: EntityManager, previous: ApiKey, previousExpiresIn: number, createdByUserId: string | null): Promise<RolledKey> {
  checkGrace(previousExpiresIn);
  const status = apiKeyStatusOf(previous);
  if (status !== 'active') throw new InvalidInputError(`API key ${previous.id} is ${status}: only an active key can be rolled`);
  if (previous.supersededAt) throw new InvalidInputError(`API key ${previous.id} was already rolled over: roll its successor instead`);
  const issued = await issueApiKey(tx, {
    accountId: previous.account.id,
    kind: apiKeyKindOf(previous),
    userId: previous.userId,
    description: previous.description,
    createdByUserId,
  });
  if (previous.expiresAt) {
    issued.apiKey.expiresAt = previous.expiresAt;
    await tx.execute('update api_keys set expires_at = ? where id = ?', [previous.expiresAt, issued.apiKey.id]);
  }
  previous.supersededAt = new Date();
  await tx.execute('update api_keys set superseded_at = ? where id = ?', [previous.supersededAt, previous.id]);
  await shortenApiKey(tx, previous, new Date(Date.now() + previousExpiresIn * 1000));
  return { ...issued, previous };
}

/** The operator's listing (`accessctl api-keys list`): every key of the account, or of one user, newest first. */
export function listApiKeysForOperator(em: EntityManager, accountId: string, userId?: string): Promise<ApiKey[]> {
  return em.find(ApiKey, { account: accountId, ...(userId ? { userId } : {}) }, { orderBy: { createdAt: 'desc', id: 'desc' } });
}

/** One key by id, for the operator (any account). */
export async function findApiKeyForOperator(em: EntityManager, id: string): Promise<ApiKey> {
  const key = PUBLIC_ID_PATTERN.test(id) ? await em.findOne(ApiKey, { id }) : null;
  if (!key) throw new NotFoundError('API key');
  return key;
}

export interface ApiKeyPageRequest {
  userId?: string | null;
  statuses?: readonly ApiKeyStatus[] | null;
  first: number;
  after?: { createdAt: Date; id: string };
}

export interface ApiKeyPage {
  /** Runs only when rows are selected. */
  slice(): Promise<{ items: ApiKey[]; hasNextPage: boolean }>;
  /** Runs only when `totalCount` is selected. */
  countTotal(): Promise<number>;
}

/**
 * API keys as the API's callers manage them, rights first: account-level keys
 * need `account_admin`; a user manages their own keys unless read-only or restricted; nobody mints a
 * key with more rights than the credential asking (see `policy.assertMayIssueApiKey`).
 */
export class ApiKeysService {
  constructor(
    private readonly em: EntityManager,
    private readonly principal: Principal,
    private readonly transactions: TransactionRunner,
  ) {}

  async list(request: ApiKeyPageRequest): Promise<ApiKeyPage> {
    if (request.userId) {
      policy.assertMayReadApiKeysOf(this.principal, request.userId);
      if (!(await this.isLiveUser(request.userId))) throw new NotFoundError('user');
    } else {
      policy.assertAccountAdmin(this.principal);
    }
    return this.pageFor(request);
  }

  /** Newest first, keyset-paged on (created_at, id). `User.apiKeys` calls it after `assertMayReadApiKeysOf`. */
  pageFor(request: ApiKeyPageRequest): ApiKeyPage {
    const where: string[] = ['account_id = ?'];
    const params: unknown[] = [this.principal.accountId];
    if (request.userId) {
      where.push('user_id = ?');
      params.push(request.userId);
    }
    if (request.statuses?.length) {
      const now = new Date().toISOString();
      const tests = [...new Set(request.statuses)].map((status) => {
        if (status === 'revoked') return 'revoked_at is not null';
        params.push(now);
        return status === 'expired' ? '(revoked_at is null and expires_at <= ?)' : '(revoked_at is null and (expires_at is null or expires_at > ?))';
      });
      where.push(`(${tests.join(' or ')})`);
    }
    const filter = where.join(' and ');
    return {
      slice: async () => {
        const conditions = [filter];
        const pageParams = [...params];
        if (request.after) {
          conditions.push('(created_at, id) < (?::timestamptz, ?)');
          pageParams.push(request.after.createdAt.toISOString(), request.after.id);
        }
        const rows = await this.em.execute<{ id: string }[]>(
          `select id from api_keys where ${conditions.join(' and ')} order by created_at desc, id desc limit ?`,
          [...pageParams, request.first + 1],
        );
        const ids = rows.map((row) => row.id);
        const keys = ids.length ? await this.em.find(ApiKey, { id: { $in: ids } }) : [];
        const byId = new Map(keys.map((key) => [key.id, key]));
        const found = ids.map((id) => byId.get(id)!);
        return { items: found.slice(0, request.first), hasNextPage: found.length > request.first };
      },
      countTotal: async () => {
        const [row] = await this.em.execute<{ n: string | number }[]>(`select count(*) as n from api_keys where ${filter}`, params);
        return Number(row?.n ?? 0);
      },
    };
  }

  async create(options: { kind: ApiKeyKind; userId?: string | null; description?: string | null; expiresAt?: Date | null }): Promise<IssuedKey> {
    if (!(API_KEY_KINDS as readonly string[]).includes(options.kind)) throw new InvalidInputError(`kind must be one of ${API_KEY_KINDS.join(', ')}`);
    // Input first where it costs no look-up, so nothing below runs for a request that will be refused anyway.
    checkDescription(options.description);
    checkExpiry(options.expiresAt, new Date());
    checkHolder(options.kind, options.userId);
    return this.transactions.run(this.em, async (tx) => {
      const holder = options.kind === 'user' && options.userId ? await lockKeyHolder(tx, this.principal.accountId, options.userId) : undefined;
      policy.assertMayIssueApiKey(this.principal, options.kind, holder);
      return issueApiKey(tx, {
        accountId: this.principal.accountId,
        kind: options.kind,
        userId: options.userId ?? null,
        description: options.description ?? null,
        expiresAt: options.expiresAt ?? null,
        createdByUserId: isUserPrincipal(this.principal) ? this.principal.userId : null,
      });
    }, 'apiKeys.create');
  }

  async revoke(id: string): Promise<ApiKey> {
    return this.transactions.run(this.em, async (tx) => {
      const key = await this.visibleKey(tx, id);
      if (key.userId) policy.assertMayRevokeApiKeysOf(this.principal, await keyHolder(tx, this.principal.accountId, key.userId));
      else policy.assertManagesCredentials(this.principal);
      return revokeApiKeyRow(tx, key);
    }, 'apiKeys.revoke');
  }

  /** A replacement with the same kind, user and description; the old key keeps working for `previousExpiresIn` seconds. */
  async roll(id: string, previousExpiresIn: number = DEFAULT_ROLL_GRACE_SECONDS): Promise<RolledKey> {
    checkGrace(previousExpiresIn);
    return this.transactions.run(this.em, async (tx) => {
      const previous = await this.visibleKey(tx, id);
      const holder = previous.userId ? await lockKeyHolder(tx, this.principal.accountId, previous.userId) : undefined;
      policy.assertMayIssueApiKey(this.principal, apiKeyKindOf(previous), holder);
      return rollApiKeyRow(tx, previous, previousExpiresIn, isUserPrincipal(this.principal) ? this.principal.userId : null);
    }, 'apiKeys.roll');
  }

  /** A key of the caller's account that the caller may see; any other id is not found. */
  private async visibleKey(tx: EntityManager, id: string): Promise<ApiKey> {
    const key = PUBLIC_ID_PATTERN.test(id) ? await tx.findOne(ApiKey, { id, account: this.principal.accountId }) : null;
    if (!key) throw new NotFoundError('API key');
    if (key.userId) policy.assertMayReadApiKeysOf(this.principal, key.userId);
    else policy.assertAccountAdmin(this.principal);
    return key;
  }

  private async isLiveUser(userId: string): Promise<boolean> {
    if (!PUBLIC_ID_PATTERN.test(userId)) return false;
    const [row] = await this.em.execute<{ id: string }[]>(`select id from users where id = ? and account_id = ? and ${LIVE_USER}`, [userId, this.principal.accountId]);
    return row !== undefined;
  }
}

/** Revocation by possession: every key with one of these digests that still works (not revoked, not expired), recorded one by one. */
export async function revokeApiKeysByDigest(em: EntityManager, digests: readonly string[], at: Date = new Date()): Promise<number> {
  if (digests.length === 0) return 0;
  const rows = await em.execute<{ id: string; account_id: string; user_id: string | null; description: string | null }[]>(
    `update api_keys set revoked_at = ? where revoked_at is null and (expires_at is null or expires_at > ?) and token_digest in (${digests.map(() => '?').join(', ')})
      returning id, account_id, user_id, description`,
    [at, at, ...digests],
  );
  for (const row of rows) {
    recordChange(em, {
      accountId: row.account_id,
      action: 'revoke',
      resource: { type: 'api_key', id: row.id, ...(row.description ? { summary: row.description } : {}) },
      ...(row.user_id ? { userId: row.user_id } : {}),
      revokesAccess: true,
    });
  }
  return rows.length;
}
