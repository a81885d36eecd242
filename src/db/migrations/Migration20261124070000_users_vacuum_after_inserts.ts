import { Migration } from '@mikro-orm/migrations';

/**
 * Searches read two things that only VACUUM keeps cheap after users are added, and PostgreSQL's
 * default vacuums an insert-only table after 1,000 + 20% of its rows are new: 200,000 users into an
 * account of 1,000,000, so a few thousand new users could stay unvacuumed for good.
 * - The GIN indexes (trigrams, and the initials index the bounded walk probes once per initial)
 *   queue new entries in a pending list that every probe reads whole until VACUUM merges it: after
 *   10,000 new users, 2 MB, and a search for "shafi" at 1,000,000 users took 23 ms instead of 6.
 * - The walk is an index-only scan of the name order: on heap pages VACUUM has not yet marked
 *   all-visible it reads the table row of every entry ("an": 30 ms instead of 17).
 * (docs/BENCHMARKS.md, "Full run from a fresh clone, 2026-11-24 06:44": measured after 20,400 users
 * were added and before a VACUUM.) So autovacuum visits `users` after every 1,000 inserted rows
 * whatever its size; such a visit reads only the pages changed since the last one, and no insert
 * pays anything more. It takes autovacuum being on, as it is by default (the CI machine's
 * PostgreSQL turns it off; the benchmark vacuums before it measures).
 */
export class Migration20261124070000_users_vacuum_after_inserts extends Migration {
  override name = 'Migration20261124070000_users_vacuum_after_inserts';

  override up(): void {
    this.addSql('alter table users set (autovacuum_vacuum_insert_threshold = 1000, autovacuum_vacuum_insert_scale_factor = 0);');
  }

  override down(): void {
    this.addSql('alter table users reset (autovacuum_vacuum_insert_threshold, autovacuum_vacuum_insert_scale_factor);');
  }
}
