import { allAppReadOnlyTables } from '../../app/features.js';
import { setAuditMinRetention } from '../../audit/audit-maintenance.js';
import { grantAppRole, MIKRO_ORM_MIGRATIONS_TABLE } from '../../db/app-role.js';
import { requireOption, UsageError, type CliCommand } from '../command.js';

/** SPEC section 19: the least-privilege role the server may serve with. Runs as the owner (DATABASE_OWNER_URL, else DATABASE_URL). */
export const grantAppRoleCommand: CliCommand = {
  name: 'db grant-app-role',
  usage: 'accessctl db grant-app-role --role NAME [--min-retention-days N] [--json]   (as the schema owner: DATABASE_OWNER_URL, else DATABASE_URL)',
  options: { role: { type: 'string' }, 'min-retention-days': { type: 'string' } },
  asOwner: true,
  async run(database, values) {
    if (database.kind !== 'postgresql') throw new UsageError('the embedded database has one role: grant-app-role needs PostgreSQL (DATABASE_URL)');
    const role = requireOption(values, 'role');
    const rawDays = values['min-retention-days'];
    if (rawDays !== undefined && (typeof rawDays !== 'string' || !/^\d{1,5}$/.test(rawDays))) throw new UsageError('--min-retention-days must be a whole number of days');
    const granted = await grantAppRole(database.em(), { role, readOnlyTables: allAppReadOnlyTables(), migrationTables: [MIKRO_ORM_MIGRATIONS_TABLE] });
    if (typeof rawDays === 'string') await setAuditMinRetention(database.em(), Number(rawDays));
    return { role, schema: granted.schema, owner: granted.owner, read_only_tables: allAppReadOnlyTables(), ...(typeof rawDays === 'string' ? { min_retention_days: Number(rawDays) } : {}) };
  },
  human: (result) =>
    `Role ${String(result.role)} may now serve schema ${String(result.schema)} (owned by ${String(result.owner)}); it only reads ${(result.read_only_tables as string[]).join(', ')}.` +
    (result.min_retention_days === undefined ? '' : ` The purge keeps at least ${String(result.min_retention_days)} day(s).`),
};

export const dbCommands: CliCommand[] = [grantAppRoleCommand];
