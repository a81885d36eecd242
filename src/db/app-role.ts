import type { EntityManager } from '@mikro-orm/sql';
import { InvalidInputError } from '../errors/domain-errors.js';

export interface AppRoleGrant {
  /** The role the server serves with (DATABASE_URL); it exists already, made by the operator. */
  role: string;
  /** Tables the role may only read: the features' `appReadOnlyTables` (the audit trail's). */
  readOnlyTables: readonly string[];
  /** Tables the migrations keep for themselves; the role reads them (to see the schema is current) and writes nothing. */
  migrationTables: readonly string[];
}

export const MIKRO_ORM_MIGRATIONS_TABLE = 'mikro_orm_migrations';

const quoteIdentifier = (name: string) => `"${name.replaceAll('"', '""')}"`;

/**
 * Grants a least-privilege app role what serving needs, run as the schema's
 * owner: rows of every table, its sequences, and EXECUTE on the schema's functions (the audit
 * trail's append and purge functions, SECURITY DEFINER of the owner, among them); and only SELECT
 * on the tables written through those functions alone. No TRUNCATE, no DDL, no ownership: a
 * session of that role cannot update, delete or truncate audit records or move a chain's head,
 * whatever it sets. Default privileges cover tables later migrations (run by the owner) create.
 */
export async function grantAppRole(em: EntityManager, grant: AppRoleGrant): Promise<{ schema: string; owner: string }> {
  const [role] = await em.execute<{ rolsuper: boolean; rolbypassrls: boolean; is_owner: boolean }[]>(
    `select r.rolsuper, r.rolbypassrls, r.rolname = current_user or pg_has_role(r.rolname, current_user, 'member') as is_owner
       from pg_roles r where r.rolname = ?`,
    [grant.role],
  );
  if (!role) throw new InvalidInputError(`role ${grant.role} does not exist: create it first (CREATE ROLE ${grant.role} LOGIN PASSWORD '...')`);
  if (role.rolsuper || role.rolbypassrls || role.is_owner) {
    throw new InvalidInputError(`role ${grant.role} is a superuser, bypasses row security or is (a member of) the owner: an app role must hold only what it is granted`);
  }
  const [{ schema, owner }] = await em.execute<{ schema: string; owner: string }[]>('select current_schema() as schema, current_user as owner');
  const target = quoteIdentifier(grant.role);
  const inSchema = quoteIdentifier(schema);
  const statements = [
    `grant usage on schema ${inSchema} to ${target}`,
    `grant select, insert, update, delete on all tables in schema ${inSchema} to ${target}`,
    `grant usage, select on all sequences in schema ${inSchema} to ${target}`,
    `grant execute on all functions in schema ${inSchema} to ${target}`,
    `alter default privileges in schema ${inSchema} grant select, insert, update, delete on tables to ${target}`,
    `alter default privileges in schema ${inSchema} grant usage, select on sequences to ${target}`,
    `alter default privileges in schema ${inSchema} grant execute on functions to ${target}`,
    `revoke create on schema ${inSchema} from ${target}`,
  ];
  for (const table of [...grant.readOnlyTables, ...grant.migrationTables]) {
    statements.push(`revoke insert, update, delete, truncate, references, trigger on ${quoteIdentifier(table)} from ${target}`);
  }
  await em.transactional(async (tx) => {
    for (const statement of statements) await tx.execute(statement);
  });
  return { schema, owner };
}
