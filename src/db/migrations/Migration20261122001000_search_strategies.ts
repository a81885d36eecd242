import { Migration } from '@mikro-orm/migrations';

/**
 * Indexes for user search (docs/rest-api.md, "Searching users"). Name and email are searched as one string,
 * `lower(name || chr(1) || email)`: one trigram index instead of two, so one bitmap serves a term,
 * and the separator (a control character no term may contain) keeps a match from spanning both.
 * Terms of one or two characters hold no trigram; the second index stores the same string with
 * each character tripled ("zq" -> "zzzqqq"), which turns them into trigram terms.
 */
export class Migration20261122001000_search_strategies extends Migration {
  override name = 'Migration20261122001000_search_strategies';

  override up(): void {
    this.addSql(`create index users_search_idx on users
      using gin (lower(name || chr(1) || email) gin_trgm_ops) where deleted_at is null;`);
    this.addSql(`create index users_search_short_terms_idx on users
      using gin (regexp_replace(lower(name || chr(1) || email), '(.)', '\\1\\1\\1', 'g') gin_trgm_ops) where deleted_at is null;`);
    this.addSql('drop index if exists users_name_trgm_idx;');
    this.addSql('drop index if exists users_email_trgm_idx;');
  }
}
