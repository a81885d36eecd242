import { readFile } from 'node:fs/promises';
import { checkpointJson, checkpointLine, parseCheckpoint } from '../../audit/audit-chain.js';
import { auditCheckpoint, exportAuditRecords, purgeAuditRecords, verifyAgainstCheckpoint, verifyAuditChain } from '../../audit/audit-maintenance.js';
import { loadConfig } from '../../config/config.js';
import { positiveInteger, requireOption, UsageError, type CliCommand } from '../command.js';

function dateOption(values: Record<string, string | boolean | undefined>, name: string): Date {
  const raw = requireOption(values, name);
  const date = new Date(raw);
  if (!/^\d{4}-\d{2}-\d{2}(T|$)/.test(raw) || Number.isNaN(date.getTime())) throw new UsageError(`--${name} must be an ISO 8601 date or date-time such as 2026-11-23T09:00:00Z`);
  return date;
}

/**
 * Walks an account's chain: exit 0 with the count verified, or exit 1 naming the first bad record.
 * With a checkpoint printed earlier, also the records removed from the end since.
 */
export const verifyAuditCommand: CliCommand = {
  name: 'audit verify',
  usage: 'accessctl audit verify --account ID [--checkpoint FILE] [--json]   (exit 1 names the first record edited, removed or out of order, or the tail removed after the checkpoint)',
  options: { account: { type: 'string' }, checkpoint: { type: 'string' } },
  async run(database, values) {
    const accountId = requireOption(values, 'account');
    const checkpointFile = typeof values.checkpoint === 'string' ? values.checkpoint : undefined;
    let checkpoint;
    if (checkpointFile !== undefined) {
      const text = await readFile(checkpointFile, 'utf8').catch((error: NodeJS.ErrnoException) => {
        throw new UsageError(`--checkpoint ${checkpointFile} cannot be read (${error.code ?? error.message})`);
      });
      checkpoint = parseCheckpoint(text);
      if (!checkpoint) throw new UsageError(`--checkpoint ${checkpointFile} holds no checkpoint: give what \`accessctl audit checkpoint\` printed (plain or --json)`);
      if (checkpoint.accountId !== accountId) throw new UsageError(`--checkpoint ${checkpointFile} is account ${checkpoint.accountId}'s, not ${accountId}'s`);
    }
    const chained = await verifyAuditChain(database.em(), accountId);
    const outcome = (checkpoint && (await verifyAgainstCheckpoint(database.em(), checkpoint))) || chained;
    const against = checkpoint ? { checkpoint: { position: checkpoint.position, time: checkpoint.time.toISOString() } } : {};
    return { account_id: accountId, ...against, ...outcome.ok
      ? { ok: true, verified: outcome.verified }
      : { ok: false, verified: chained.verified, record_id: outcome.recordId, position: outcome.position, problem: outcome.problem } };
  },
  human: (result) => result.ok
    ? `Audit trail of ${String(result.account_id)}: ${String(result.verified)} record(s) verified${result.checkpoint ? `; nothing removed since the checkpoint at position ${String((result.checkpoint as { position: number }).position)}` : ''}.`
    : `Audit trail of ${String(result.account_id)} is broken at position ${String(result.position)}${result.record_id ? ` (record ${String(result.record_id)})` : ''}: ${String(result.problem)}.`,
  exitCode: (result) => (result.ok ? 0 : 1),
};

/** The account's head signed with the chain key: keep it outside the database, to verify against later. */
export const checkpointAuditCommand: CliCommand = {
  name: 'audit checkpoint',
  usage: 'accessctl audit checkpoint --account ID [--json]   (the chain head signed; keep it where the database\'s writers cannot reach)',
  options: { account: { type: 'string' } },
  async run(database, values) {
    const accountId = requireOption(values, 'account');
    const checkpoint = await auditCheckpoint(database.em(), accountId);
    if (!checkpoint) throw new UsageError(`account ${accountId} has no audit record yet: nothing to checkpoint`);
    return checkpointJson(checkpoint);
  },
  human: (result) => checkpointLine(parseCheckpoint(JSON.stringify(result))!),
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

export const auditCommands: CliCommand[] = [verifyAuditCommand, checkpointAuditCommand, purgeAuditCommand, exportAuditCommand];
