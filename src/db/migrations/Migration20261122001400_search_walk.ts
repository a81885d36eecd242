import { Migration } from '@mikro-orm/migrations';

/**
 * The name order made cheap to walk for a search (docs/rest-api.md, "Searching users"). `search_text` is
 * the string the trigram indexes already index, `lower(name || chr(1) || email)`, stored once per
 * row: the btree of the name order carries it, so a walk tests each user with a LIKE on that index
 * entry and never reads the table row, and ANALYZE keeps statistics on it, from which the planner
 * estimates how many users a term matches. The walk's condition names the column, the trigram
 * indexes' conditions name the expression: each statement can use only the index it was written for.
 */
export class Migration20261122001400_search_walk extends Migration {
  override name = 'Migration20261122001400_search_walk';

  override up(): void {
    this.addSql(`alter table users add column search_text text generated always as (lower(name || chr(1) || email)) stored;`);
    this.addSql('create index users_account_name_id_search_live_idx on users (account_id, name, id) include (search_text) where deleted_at is null;');
    this.addSql('drop index users_account_name_id_live_idx;');
    // One histogram bound per 0.1% of users (the default, 1%, cannot tell 50 matches per million from 5,000).
    this.addSql('alter table users alter column search_text set statistics 1000;');
  }

  override down(): void {
    this.addSql('create index users_account_name_id_live_idx on users (account_id, name, id) where deleted_at is null;');
    this.addSql('drop index users_account_name_id_search_live_idx;');
    this.addSql('alter table users drop column search_text;');
  }
}
