import { Migration } from '@mikro-orm/migrations';

/**
 * Provisioning from an identity provider (SPEC section 12, src/scim). A user can be suspended
 * (`suspended_at`: the SCIM `active: false`), carries the identity provider's id (`external_id`,
 * unique among the account's live users, so an `externalId eq` filter is one index look-up), and an
 * account can hold provisioning tokens (digests only). Delegations revoked by a suspension say so,
 * and may be revoked by a provisioning token, whose kind is longer than the column allowed. The
 * reasons keep `password_changed` (Migration20261123000100_security_fixes, issue 22), which this
 * list replaces.
 */
export class Migration20261123000300_scim_provisioning extends Migration {
  override name = 'Migration20261123000300_scim_provisioning';

  override up(): void {
    this.addSql('alter table users add column suspended_at timestamptz null;');
    this.addSql('alter table users add column external_id varchar(100) null;');
    this.addSql('create unique index users_account_external_id_live_uniq on users (account_id, external_id) where deleted_at is null and external_id is not null;');

    this.addSql(`create table provisioning_tokens (
      id varchar(7) primary key,
      account_id varchar(7) not null references accounts (id),
      token_digest varchar(64) not null unique,
      description varchar(255) null,
      created_at timestamptz not null default now(),
      revoked_at timestamptz null
    );`);
    this.addSql('create index provisioning_tokens_account_idx on provisioning_tokens (account_id, created_at);');

    this.addSql('alter table oauth_delegations alter column revoked_by_kind type varchar(32);');
    this.addSql('alter table oauth_delegations drop constraint oauth_delegations_revoked_by_kind_check;');
    this.addSql(`alter table oauth_delegations add constraint oauth_delegations_revoked_by_kind_check
      check (revoked_by_kind in ('account_key','user_key','oauth','oauth_app','provisioning_token'));`);
    this.addSql('alter table oauth_delegations drop constraint oauth_delegations_revocation_reason_check;');
    this.addSql(`alter table oauth_delegations add constraint oauth_delegations_revocation_reason_check
      check (revocation_reason in ('sign_out','user_deleted','grant_revoked','app_deleted','password_changed','user_suspended'));`);
  }

  override down(): void {
    this.addSql('alter table oauth_delegations drop constraint oauth_delegations_revocation_reason_check;');
    this.addSql(`alter table oauth_delegations add constraint oauth_delegations_revocation_reason_check
      check (revocation_reason in ('sign_out','user_deleted','grant_revoked','app_deleted','password_changed'));`);
    this.addSql('alter table oauth_delegations drop constraint oauth_delegations_revoked_by_kind_check;');
    this.addSql(`alter table oauth_delegations add constraint oauth_delegations_revoked_by_kind_check
      check (revoked_by_kind in ('account_key','user_key','oauth','oauth_app'));`);
    this.addSql('drop table provisioning_tokens;');
    this.addSql('drop index users_account_external_id_live_uniq;');
    this.addSql('alter table users drop column external_id;');
    this.addSql('alter table users drop column suspended_at;');
  }
}
