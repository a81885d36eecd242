import type { Feature } from '../app/feature.js';
import { AuditRecordResolver, UserAuditRecordsQueryResolver, UserAuditRecordsResolver } from './audit-record.resolver.js';
import { AuditRecordAddedResolver } from './audit-record-added.resolver.js';
import { auditRecordRoutes, auditRecordSchemas } from './audit-record.rest.js';
import { auditTrailHook } from './audit-trail.hook.js';
import { auditJobs } from './audit.jobs.js';

export const auditFeature: Feature = {
  name: 'audit',
  // Plain SQL (audit_batches, audit_record_roots, audit_chain_heads): records are appended by the write path's hook, never loaded as entities.
  entities: [],
  resolvers: [AuditRecordResolver, UserAuditRecordsResolver, UserAuditRecordsQueryResolver, AuditRecordAddedResolver],
  routes: auditRecordRoutes,
  schemas: auditRecordSchemas,
  commitHooks: [auditTrailHook],
  jobs: auditJobs,
  // Records and heads are written only by audit_append_batch, audit_index_roots and audit_purge_batch (the owner's functions); audit_records is a view of them.
  appReadOnlyTables: ['audit_batches', 'audit_record_roots', 'audit_root_index_heads', 'audit_records', 'audit_chain_heads', 'audit_policy'],
};
