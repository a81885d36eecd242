import { chainHash } from '../../src/audit/audit-chain.js';
import { auditBodyOf, type AuditRecordBody } from '../../src/audit/audit-record.js';

/** A record as the releases before batches stored it (the `audit_records` table then, the view now): the columns chain versions 1 and 2 hashed. */
export interface LegacyAuditRow {
  account_id: string;
  position: string;
  id: string;
  execution_time: Date;
  action: string;
  root_resource_type: string;
  root_resource_id: string;
  actor_type: string | null;
  actor_id: string | null;
  method_type: string;
  method_truncated_token: string | null;
  body: AuditRecordBody;
}

/** The link those releases gave the record after `previousHash`: version 1 unkeyed, version 2 under the chain key. */
export function legacyLink(previousHash: string, row: LegacyAuditRow, version: 1 | 2): string {
  return chainHash(previousHash, {
    accountId: row.account_id, position: Number(row.position), id: row.id, executionTime: new Date(row.execution_time), action: row.action,
    rootResourceType: row.root_resource_type, rootResourceId: row.root_resource_id, actorType: row.actor_type, actorId: row.actor_id,
    methodType: row.method_type, methodTruncatedToken: row.method_truncated_token, body: auditBodyOf(row.body),
  }, version);
}
