import type { Feature } from '../app/feature.js';
import { AuditRecordResolver, UserAuditRecordsQueryResolver, UserAuditRecordsResolver } from './audit-record.resolver.js';
import { AuditRecordAddedResolver } from './audit-record-added.resolver.js';
import { auditRecordRoutes, auditRecordSchemas } from './audit-record.rest.js';
import { auditTrailHook } from './audit-trail.hook.js';

export const auditFeature: Feature = {
  name: 'audit',
  // Plain SQL (audit_records, audit_chain_heads): records are appended by the write path's hook, never loaded as entities.
  entities: [],
  resolvers: [AuditRecordResolver, UserAuditRecordsResolver, UserAuditRecordsQueryResolver, AuditRecordAddedResolver],
  routes: auditRecordRoutes,
  schemas: auditRecordSchemas,
  commitHooks: [auditTrailHook],
  // Records and heads are written only by audit_append_records and audit_purge_batch (the owner's functions).
  appReadOnlyTables: ['audit_records', 'audit_contexts', 'audit_chain_heads', 'audit_policy'],
};
