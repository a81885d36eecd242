import { allAppReadOnlyTables } from '../../app/features.js';
import { setAuditMinRetention } from '../../audit/audit-maintenance.js';
import { grantAppRole, MIKRO_ORM_MIGRATIONS_TABLE } from '../../db/app-role.js';
import { loadConfig } from '../../config/config.js';
import { requireOption, UsageError, type CliCommand } from '../command.js';

/** The least-privilege role the server may serve with. Runs as the owner (DATABASE_OWNER_URL, else DATABASE_URL). */
export const grantAppRoleCommand: CliCommand = {
  name: 'db grant-app-role',
  usage: 'accessctl db grant-app-role --role NAME [--min-retention-days N] [--json]   (as the schema owner: DATABASE_OWNER_URL, else DATABASE_URL; N defaults to AUDIT_RETENTION_DAYS)',
  options: { role: { type: 'string' }, 'min-retention-days': { type: 'string' } },
  asOwner: true,
  async run(database, values) {
    if (database.kind !== 'postgresql') throw new UsageError('the embedded database has one role: grant-app-role needs PostgreSQL (DATABASE_URL)');
    const role = requireOption(values, 'role');
    const rawDays = values['min-retention-days'];
    if (rawDays !== undefined && (typeof rawDays !== 'string' || !/^\d{1,5}$/.test(rawDays))) throw new UsageError('--min-retention-days must be a whole number of days');
    // The purge function is the role's too: by default it may delete nothing younger than the configured retention.
    const minRetentionDays = typeof rawDays === 'string' ? Number(rawDays) : loadConfig().auditRetentionDays;
    const granted = await grantAppRole(database.em(), { role, readOnlyTables: allAppReadOnlyTables(), migrationTables: [MIKRO_ORM_MIGRATIONS_TABLE] });
    await setAuditMinRetention(database.em(), minRetentionDays);
    return { role, schema: granted.schema, owner: granted.owner, read_only_tables: allAppReadOnlyTables(), min_retention_days: minRetentionDays };
  },
  human: (result) =>
    `Role ${String(result.role)} may now serve schema ${String(result.schema)} (owned by ${String(result.owner)}); it only reads ${(result.read_only_tables as string[]).join(', ')}.` +
    ` The purge keeps at least ${String(result.min_retention_days)} day(s).`,
};

export const dbCommands: CliCommand[] = [grantAppRoleCommand];
