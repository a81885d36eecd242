import { Migration } from '@mikro-orm/migrations';

/**
 * Credentials that can be seen, rolled and revoked through the API (SPEC section 18):
 * - API keys gain who created them (a user; null for account keys and the operator CLI), when they
 *   stop working by themselves (a roll's grace period, or an expiry chosen at creation), when they
 *   were last used (kept at most 60 s stale, written at most once a minute per key and instance)
 *   and the last 4 characters of the secret (what lists show; keys issued before have none);
 * - provisioning tokens gain the last use and the last 4 characters the same way.
 * The listing walks the account's keys newest first by (account_id, created_at desc, id desc), and
 * a user's through the existing user index widened to every status.
 */
export class Migration20261125020000_credentials_lifecycle extends Migration {
  override name = 'Migration20261125020000_credentials_lifecycle';

  override up(): void {
    this.addSql(`alter table api_keys
      add column created_by_user_id varchar(7) null,
      add column expires_at timestamptz null,
      add column last_used_at timestamptz null,
      add column token_tail varchar(4) null;`);
    this.addSql('create index api_keys_account_created_idx on api_keys (account_id, created_at desc, id desc);');
    this.addSql('create index api_keys_user_created_idx on api_keys (user_id, created_at desc, id desc) where user_id is not null;');
    this.addSql(`alter table provisioning_tokens
      add column last_used_at timestamptz null,
      add column token_tail varchar(4) null;`);
  }

  override down(): void {
    this.addSql('drop index api_keys_user_created_idx;');
    this.addSql('drop index api_keys_account_created_idx;');
    this.addSql('alter table api_keys drop column created_by_user_id, drop column expires_at, drop column last_used_at, drop column token_tail;');
    this.addSql('alter table provisioning_tokens drop column last_used_at, drop column token_tail;');
  }
}
