import { Migration } from '@mikro-orm/migrations';

/**
 * Search terms of one or two characters contain no trigram, so the trigram indexes cannot serve
 * them and a rare one ("zq") used to walk every user. This index stores name and email with each
 * character tripled ("zq" -> "zzzqqq"): the short term becomes a trigram term the same pg_trgm
 * index serves. It only narrows the candidates; the exact ILIKE on name and email still decides.
 */
export class Migration20261122001000_short_term_search extends Migration {
  override name = 'Migration20261122001000_short_term_search';

  override up(): void {
    this.addSql(`create or replace function aag_search_tripled(value text) returns text
      language sql immutable strict parallel safe
      as $$ select regexp_replace(lower(value), '(.)', '\\1\\1\\1', 'g') $$;`);
    this.addSql(`create index users_search_short_terms_idx on users
      using gin (aag_search_tripled(name || ' ' || email) gin_trgm_ops) where deleted_at is null;`);
  }
}
