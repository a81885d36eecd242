import type { EntityManager } from '@mikro-orm/sql';

/**
 * Reads every text-like column of every table and reports which hold any of the needles (secrets
 * that must never be stored in clear). `scanned` lists the columns read, so a test can prove the
 * scan covered the tables it cares about.
 */
export async function scanTextColumns(em: EntityManager, needles: readonly string[]): Promise<{ scanned: string[]; hits: string[] }> {
  const columns = await em.execute<{ table_name: string; column_name: string }[]>(
    `select c.table_name, c.column_name
       from information_schema.columns c
       join information_schema.tables t on t.table_schema = c.table_schema and t.table_name = c.table_name and t.table_type = 'BASE TABLE'
      where c.table_schema = current_schema()
        and c.data_type in ('text', 'character varying', 'character', 'json', 'jsonb', 'uuid', 'bytea')
      order by 1, 2`,
  );
  const hits: string[] = [];
  for (const { table_name, column_name } of columns) {
    const values = await em.execute<{ value: string | null }[]>(`select "${column_name}"::text as value from "${table_name}"`);
    for (const { value } of values) {
      if (value && needles.some((needle) => value.includes(needle))) hits.push(`${table_name}.${column_name}`);
    }
  }
  return { scanned: columns.map((column) => `${column.table_name}.${column.column_name}`), hits };
}
