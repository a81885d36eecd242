import { Migration } from '@mikro-orm/migrations';

/**
 * A finer skip for a search's walk of the name order than the initials index gives (docs/rest-api.md,
 * "Searching users"). When many users share an initial and a long stretch of them holds no match
 * ("Ada Allen ...", "Ada Dijkstra ..." before the first "Ada Lovelace ..."), the initial cannot be
 * skipped and the walk read all of them. Each live user is also keyed by "the first six characters
 * of the name, chr(1), a two-character substring of `search_text`", one key per substring: in an
 * order by code point, the users sharing those six characters are one stretch of the name order,
 * and a stretch without all of a term's two-character keys holds no match and is skipped whole.
 * Two characters, so that two-character terms, which hold no trigram, are served too.
 *
 * `user_search_prefix_probe` builds the keys a term needs under one prefix, exactly as
 * `user_search_prefix_keys` builds them; `user_search_after_prefix` is where the stretch of a prefix
 * ends: the least name that sorts after every name with that prefix (a name shorter than six
 * characters is its own prefix and its own stretch; past U+D7FF comes U+E000, as no character is a
 * surrogate; nothing sorts after a prefix of U+10FFFF only).
 */
export class Migration20261129070000_search_name_prefixes extends Migration {
  override name = 'Migration20261129070000_search_name_prefixes';

  override up(): void {
    this.addSql(`create function user_search_prefix_keys(name text, search_text text) returns text[]
      language sql immutable strict parallel safe
      return array(select left(name, 6) || chr(1) || substr(search_text, i, 2) from generate_series(1, length(search_text) - 1) as i);`);
    this.addSql(`create function user_search_prefix_probe(prefix text, term text) returns text[]
      language sql immutable strict parallel safe
      return array(select prefix || chr(1) || substr(term, i, 2) from generate_series(1, length(term) - 1) as i);`);
    this.addSql(`create function user_search_after_prefix(prefix text) returns text
      language sql immutable strict parallel safe
      return case
        when length(prefix) < 6 then prefix || chr(1)
        when rtrim(prefix, chr(1114111)) = '' then null
        else left(rtrim(prefix, chr(1114111)), -1)
          || chr(case ascii(right(rtrim(prefix, chr(1114111)), 1)) when 55295 then 57344 else ascii(right(rtrim(prefix, chr(1114111)), 1)) + 1 end)
      end;`);
    this.addSql('create index users_search_prefixes_idx on users using gin (user_search_prefix_keys(name, search_text)) where deleted_at is null;');
  }

  override down(): void {
    this.addSql('drop index users_search_prefixes_idx;');
    this.addSql('drop function user_search_after_prefix(text);');
    this.addSql('drop function user_search_prefix_probe(text, text);');
    this.addSql('drop function user_search_prefix_keys(text, text);');
  }
}
