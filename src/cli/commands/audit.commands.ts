import { exportAuditRecords, purgeAuditRecords, verifyAuditChain } from '../../audit/audit-maintenance.js';
import { loadConfig } from '../../config/config.js';
import { positiveInteger, requireOption, UsageError, type CliCommand } from '../command.js';

function dateOption(values: Record<string, string | boolean | undefined>, name: string): Date {
  const raw = requireOption(values, name);
  const date = new Date(raw);
  if (!/^\d{4}-\d{2}-\d{2}(T|$)/.test(raw) || Number.isNaN(date.getTime())) throw new UsageError(`--${name} must be an ISO 8601 date or date-time such as 2026-11-23T09:00:00Z`);
  return date;
}

/** Walks an account's chain: exit 0 with the count verified, or exit 1 naming the first bad record. */
export const verifyAuditCommand: CliCommand = {
  name: 'audit verify',
  usage: 'accessctl audit verify --account ID [--json]   (exit 1 names the first record edited, removed or out of order)',
  options: { account: { type: 'string' } },
  async run(database, values) {
    const accountId = requireOption(values, 'account');
    const outcome = await verifyAuditChain(database.em(), accountId);
    return { account_id: accountId, ...outcome.ok
      ? { ok: true, verified: outcome.verified }
      : { ok: false, verified: outcome.verified, record_id: outcome.recordId, position: outcome.position, problem: outcome.problem } };
  },
  human: (result) => result.ok
    ? `Audit trail of ${String(result.account_id)}: ${String(result.verified)} record(s) verified.`
    : `Audit trail of ${String(result.account_id)} is broken at position ${String(result.position)}${result.record_id ? ` (record ${String(result.record_id)})` : ''}: ${String(result.problem)}. ${String(result.verified)} record(s) before it verified.`,
  exitCode: (result) => (result.ok ? 0 : 1),
};

export const purgeAuditCommand: CliCommand = {
  name: 'audit purge',
  usage: 'accessctl audit purge [--retention-days N] [--json]   (default AUDIT_RETENTION_DAYS, 365; the server also purges as it goes)',
  options: { 'retention-days': { type: 'string' } },
  async run(database, values) {
    const retentionDays = positiveInteger(values, 'retention-days', loadConfig().auditRetentionDays);
    const purged = await purgeAuditRecords(database.em(), database.transactions, { retentionDays });
    return { purged, retention_days: retentionDays };
  },
  human: (result) => `Purged ${String(result.purged)} audit record(s) older than ${String(result.retention_days)} day(s).`,
};

export const exportAuditCommand: CliCommand = {
  name: 'audit export',
  usage: 'accessctl audit export --account ID --since ISO8601 --until ISO8601   (NDJSON on stdout, oldest first)',
  options: { account: { type: 'string' }, since: { type: 'string' }, until: { type: 'string' } },
  streamsStdout: true,
  async run(database, values, io) {
    const accountId = requireOption(values, 'account');
    const since = dateOption(values, 'since');
    const until = dateOption(values, 'until');
    if (since > until) throw new UsageError('--since must not be after --until');
    if (!io.write) throw new UsageError('export writes to standard output');
    const config = loadConfig();
    const urls = { api: config.publicApiUrl, web: config.publicWebUrl, feed: config.publicFeedUrl };
    const exported = await exportAuditRecords(database.em(), accountId, { since, until, urls }, io.write);
    return { account_id: accountId, exported };
  },
  human: (result) => `Exported ${String(result.exported)} audit record(s) of ${String(result.account_id)}.`,
};

export const auditCommands: CliCommand[] = [verifyAuditCommand, purgeAuditCommand, exportAuditCommand];
