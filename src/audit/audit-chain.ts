import { createHash } from 'node:crypto';

/** JSON with object keys sorted at every level: the same value hashes the same however it was stored (jsonb reorders keys). */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value ?? null);
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, field]) => field !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([key, field]) => `${JSON.stringify(key)}:${canonicalJson(field)}`).join(',')}}`;
}

/** The columns of a record the chain covers: everything it says, its place in the chain included. */
export interface ChainedRecord {
  accountId: string;
  position: number;
  id: string;
  executionTime: Date;
  action: string;
  rootResourceType: string;
  rootResourceId: string;
  actorType: string | null;
  actorId: string | null;
  methodType: string;
  methodTruncatedToken: string | null;
  body: unknown;
}

/**
 * SHA-256 over the previous record's hash and this record: editing a record changes its hash,
 * removing one breaks the link of the next, and moving one changes the position its hash covers.
 */
export function chainHash(previousHash: string, record: ChainedRecord): string {
  const covered = canonicalJson({
    account_id: record.accountId,
    position: String(record.position),
    id: record.id,
    execution_time: record.executionTime.toISOString(),
    action: record.action,
    root_resource_type: record.rootResourceType,
    root_resource_id: record.rootResourceId,
    actor_type: record.actorType,
    actor_id: record.actorId,
    method_type: record.methodType,
    method_truncated_token: record.methodTruncatedToken,
    body: record.body,
  });
  return createHash('sha256').update(previousHash).update('\n').update(covered).digest('hex');
}
