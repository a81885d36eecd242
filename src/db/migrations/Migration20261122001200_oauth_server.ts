import { Migration } from '@mikro-orm/migrations';

/**
 * The OAuth 2 authorization server (src/oauth-server): registered apps, the records oidc-provider
 * persists (sessions, interactions, codes, tokens, grants; keyed by a digest of their id, payload
 * encrypted), signing keys (encrypted), user passwords (argon2id) and sign-in attempt windows.
 * A delegation may now come from a grant (grant_id) instead of holding one token digest, and an
 * integration app acting for its account has a delegation without a user.
 */
export class Migration20261122001200_oauth_server extends Migration {
  override name = 'Migration20261122001200_oauth_server';

  override up(): void {
    this.addSql('alter table oauth_delegations alter column user_id drop not null;');
    this.addSql('alter table oauth_delegations alter column access_token_digest drop not null;');
    this.addSql('alter table oauth_delegations add column grant_id varchar(96) null;');
    this.addSql('alter table oauth_delegations add column client_name varchar(100) null;');
    this.addSql('create unique index oauth_delegations_grant_id_uniq on oauth_delegations (grant_id) where grant_id is not null;');
    this.addSql('create index oauth_delegations_client_issued_idx on oauth_delegations (client_id) where status = \'issued\';');
    this.addSql('alter table oauth_delegations drop constraint oauth_delegations_revoked_by_kind_check;');
    this.addSql(`alter table oauth_delegations add constraint oauth_delegations_revoked_by_kind_check
      check (revoked_by_kind in ('account_key','user_key','oauth','oauth_app'));`);
    this.addSql('alter table oauth_delegations drop constraint oauth_delegations_revocation_reason_check;');
    this.addSql(`alter table oauth_delegations add constraint oauth_delegations_revocation_reason_check
      check (revocation_reason in ('sign_out','user_deleted','grant_revoked','app_deleted'));`);
    this.addSql(`alter table oauth_delegations add constraint oauth_delegations_user_unless_integration
      check (user_id is not null or delegation_type = 'integration');`);
    this.addSql(`alter table oauth_delegations add constraint oauth_delegations_token_or_grant
      check (access_token_digest is not null or grant_id is not null);`);

    this.addSql(`create table oauth_apps (
      client_id varchar(64) primary key,
      account_id varchar(7) not null references accounts (id),
      name varchar(100) not null,
      kind varchar(16) not null check (kind in ('mobile','web','integration','third_party')),
      redirect_uris jsonb not null default '[]',
      scope text not null,
      client_secret_sealed text null,
      created_at timestamptz(3) not null default now()
    );`);
    this.addSql('create index oauth_apps_account_created_idx on oauth_apps (account_id, created_at desc, client_id);');

    this.addSql(`create table oauth_server_records (
      model varchar(40) not null,
      key_digest varchar(64) not null,
      payload text not null,
      grant_id varchar(96) null,
      scope text null,
      uid_digest varchar(64) null,
      user_code_digest varchar(64) null,
      expires_at timestamptz(3) null,
      consumed_at timestamptz(3) null,
      primary key (model, key_digest)
    );`);
    this.addSql('create index oauth_server_records_grant_idx on oauth_server_records (grant_id) where grant_id is not null;');
    this.addSql('create index oauth_server_records_uid_idx on oauth_server_records (model, uid_digest) where uid_digest is not null;');
    this.addSql('create index oauth_server_records_user_code_idx on oauth_server_records (model, user_code_digest) where user_code_digest is not null;');
    this.addSql('create index oauth_server_records_expires_idx on oauth_server_records (expires_at) where expires_at is not null;');

    this.addSql(`create table oauth_signing_keys (
      kid varchar(64) primary key,
      jwk_sealed text not null,
      created_at timestamptz(3) not null default now()
    );`);

    this.addSql(`create table user_passwords (
      user_id varchar(7) primary key references users (id),
      password_hash text not null,
      updated_at timestamptz(3) not null default now()
    );`);

    this.addSql(`create table sign_in_attempts (
      bucket varchar(80) primary key,
      window_started_at timestamptz(3) not null,
      attempts integer not null
    );`);
  }
}
