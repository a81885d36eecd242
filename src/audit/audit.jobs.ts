import type { Job, JobDeps } from '../app/feature.js';
import { DEFAULT_AUDIT_RETENTION_DAYS } from '../config/config.js';
import { checkpointJson, type AuditCheckpoint } from './audit-chain.js';
import { auditCheckpoint, auditCheckpoints, indexAuditRoots, purgeAuditRecords } from './audit-maintenance.js';

/** One signed checkpoint per account each hour (and after each purge). */
const CHECKPOINT_INTERVAL_MS = 3_600_000;
/** The per-user roots index follows the chains closely: reads walk the batches past its head. */
const ROOT_INDEX_INTERVAL_MS = 500;
const RETENTION_PURGE_INTERVAL_MS = 10 * 60_000;

/**
 * The trail's background work: records past retention purged (each purge a recorded write of its
 * own, as the server), signed checkpoints logged, and the per-user roots index filled after commit,
 * off the writes' path.
 */
export function auditJobs({ database, logger, settings }: JobDeps): Job[] {
  // Signed heads in the log, which lives outside the database: a tail removed later shows against them (`audit verify --checkpoint`).
  const logCheckpoint = (checkpoint: AuditCheckpoint) => logger.info({ checkpoint: checkpointJson(checkpoint) }, 'audit checkpoint');
  return [
    {
      name: 'audit-retention',
      everyMs: RETENTION_PURGE_INTERVAL_MS,
      failure: 'audit record purge failed',
      async run() {
        const retention = database.transactions.onBehalfOf({ face: 'server', description: 'audit retention purge' });
        const onPurged = async (accountId: string) => {
          const checkpoint = await auditCheckpoint(database.em(), accountId);
          if (checkpoint) logCheckpoint(checkpoint);
        };
        const purged = await purgeAuditRecords(database.em(), retention, { retentionDays: settings.auditRetentionDays ?? DEFAULT_AUDIT_RETENTION_DAYS, onPurged });
        if (purged) logger.info({ purged }, 'purged audit records past retention');
      },
    },
    {
      name: 'audit-checkpoints',
      everyMs: settings.auditCheckpointIntervalMs ?? CHECKPOINT_INTERVAL_MS,
      failure: 'audit checkpoints not logged',
      run: async () => (await auditCheckpoints(database.em())).forEach(logCheckpoint),
    },
    {
      name: 'audit-roots-index',
      everyMs: settings.auditRootIndexIntervalMs ?? ROOT_INDEX_INTERVAL_MS,
      failure: 'audit roots index not brought up to date',
      run: () => indexAuditRoots(database.em()),
    },
  ];
}
