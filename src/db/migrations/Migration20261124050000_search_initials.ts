import { Migration } from '@mikro-orm/migrations';

/**
 * Where in the name order a term's matches begin, without reading the users before them
 * (docs/rest-api.md, "Searching users"). Each live user is indexed under keys "initial of the name, chr(1), a
 * three-character substring of `search_text`", one per substring. A user whose search text holds a
 * term holds every three-character substring of it, so when the index has not all of a term's keys
 * for an initial, no user with that initial matches; that costs one look-up per key, however many
 * users share the initial or the term. In an order by code point (the C collation), the users with
 * one initial are one stretch of the name order, and a stretch with no match can be skipped whole:
 * a search walks from the first initial that holds a match instead of from the first user.
 *
 * `user_search_probe` builds the keys a term needs under one initial; it must build them exactly as
 * `user_search_keys` does.
 */
export class Migration20261124050000_search_initials extends Migration {
  override name = 'Migration20261124050000_search_initials';

  override up(): void {
    this.addSql(`create function user_search_keys(name text, search_text text) returns text[]
      language sql immutable strict parallel safe
      return array(select left(name, 1) || chr(1) || substr(search_text, i, 3) from generate_series(1, length(search_text) - 2) as i);`);
    this.addSql(`create function user_search_probe(initial text, term text) returns text[]
      language sql immutable strict parallel safe
      return array(select initial || chr(1) || substr(term, i, 3) from generate_series(1, length(term) - 2) as i);`);
    this.addSql('create index users_search_initials_idx on users using gin (user_search_keys(name, search_text)) where deleted_at is null;');
  }

  override down(): void {
    this.addSql('drop index users_search_initials_idx;');
    this.addSql('drop function user_search_probe(text, text);');
    this.addSql('drop function user_search_keys(text, text);');
  }
}
