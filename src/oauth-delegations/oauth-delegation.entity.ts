import { randomUUID } from 'node:crypto';
import { OptionalProps } from '@mikro-orm/core';
import { Entity, Enum, ManyToOne, PrimaryKey, Property } from '@mikro-orm/decorators/legacy';
import { Account } from '../accounts/account.entity.js';
import type { Principal } from '../auth/principal.js';

export const DELEGATION_TYPES = ['web', 'mobile', 'integration'] as const;
export type DelegationType = (typeof DELEGATION_TYPES)[number];

/**
 * The product's own apps: a delegation of theirs is the user's session in the product, so revoking
 * one signs the user out (`DELETE /oauth_delegations`); integrations are revoked elsewhere.
 */
export const REVOCABLE_TYPES: readonly DelegationType[] = ['mobile', 'web'];

export const DELEGATION_STATUSES = ['issued', 'revoked'] as const;
export type DelegationStatus = (typeof DELEGATION_STATUSES)[number];

export const REVOCATION_REASONS = ['sign_out', 'user_deleted', 'grant_revoked', 'app_deleted', 'password_changed', 'user_suspended'] as const;
export type RevocationReason = (typeof REVOCATION_REASONS)[number];

export function isDelegationType(value: unknown): value is DelegationType {
  return typeof value === 'string' && (DELEGATION_TYPES as readonly string[]).includes(value);
}

export function isDelegationStatus(value: unknown): value is DelegationStatus {
  return typeof value === 'string' && (DELEGATION_STATUSES as readonly string[]).includes(value);
}

/**
 * One authorization of an app to act as a user (a web session, the mobile app, an integration),
 * with exactly one access token. Only the token's SHA-256 digest is stored; it is never selected
 * by ordinary queries (lazy) nor serialized (hidden). Revoking keeps the row with who and when.
 */
@Entity({ tableName: 'oauth_delegations' })
export class OAuthDelegation {
  [OptionalProps]?: 'id' | 'status' | 'createdAt' | 'revokedAt' | 'revokedByKind' | 'revokedByCredentialId' | 'revocationReason' | 'accessTokenDigest' | 'grantId' | 'clientName';

  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @ManyToOne({ entity: () => Account, fieldName: 'account_id' })
  account!: Account;

  /**
   * A plain column: the users feature owns users; a delegation only points at one. Null only for
   * an integration app acting for the whole account (client credentials).
   */
  @Property({ type: 'string', length: 7, nullable: true })
  userId!: string | null;

  @Enum({ items: () => [...DELEGATION_TYPES], type: 'string' })
  delegationType!: DelegationType;

  @Property({ type: 'string', length: 255 })
  clientId!: string;

  /** Space-separated OAuth scopes. */
  @Property({ type: 'text' })
  scope!: string;

  @Enum({ items: () => [...DELEGATION_STATUSES], type: 'string' })
  status: DelegationStatus = 'issued';

  /** Operator-issued delegations hold one token; flow-made ones hold a grant instead (`grantId`). */
  @Property({ type: 'string', length: 64, unique: true, hidden: true, lazy: true, nullable: true })
  accessTokenDigest: string | null = null;

  /** The authorization server's grant this delegation is (one grant, one delegation). */
  @Property({ type: 'string', length: 96, nullable: true, hidden: true })
  grantId: string | null = null;

  /** The app's name when the delegation came from an OAuth flow. */
  @Property({ type: 'string', length: 100, nullable: true })
  clientName: string | null = null;

  @Property({ type: 'Date', columnType: 'timestamptz(3)' })
  createdAt: Date = new Date();

  @Property({ type: 'Date', columnType: 'timestamptz(3)' })
  expiresAt!: Date;

  @Property({ type: 'Date', columnType: 'timestamptz(3)', nullable: true })
  revokedAt: Date | null = null;

  /** Audit: the kind of credential that revoked it. */
  @Property({ type: 'string', length: 32, nullable: true })
  revokedByKind: Principal['kind'] | null = null;

  /** Audit: the id of the API key or delegation that revoked it. */
  @Property({ type: 'string', length: 64, nullable: true })
  revokedByCredentialId: string | null = null;

  @Property({ type: 'string', length: 32, nullable: true })
  revocationReason: RevocationReason | null = null;
}
