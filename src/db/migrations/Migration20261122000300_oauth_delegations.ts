import { Migration } from '@mikro-orm/migrations';

/**
 * OAuth delegations: one row per authorization of an app (web session, mobile app, integration),
 * holding the SHA-256 digest of its access token. Revocation keeps the row with its audit trail.
 * Timestamps are kept to the millisecond, the precision of the keyset cursors built from them.
 */
export class Migration20261122000300_oauth_delegations extends Migration {
  override name = 'Migration20261122000300_oauth_delegations';

  override up(): void {
    this.addSql(`create table oauth_delegations (
      id uuid primary key,
      account_id varchar(7) not null references accounts (id),
      user_id varchar(7) not null references users (id),
      delegation_type varchar(16) not null check (delegation_type in ('web','mobile','integration')),
      client_id varchar(255) not null,
      scope text not null,
      status varchar(16) not null default 'issued' check (status in ('issued','revoked')),
      access_token_digest varchar(64) not null,
      created_at timestamptz(3) not null default now(),
      expires_at timestamptz(3) not null,
      revoked_at timestamptz(3) null,
      revoked_by_kind varchar(16) null check (revoked_by_kind in ('account_key','user_key','oauth')),
      revoked_by_credential_id varchar(64) null,
      revocation_reason varchar(32) null check (revocation_reason in ('sign_out','user_deleted')),
      constraint oauth_delegations_access_token_digest_unique unique (access_token_digest),
      constraint oauth_delegations_revocation_audit check ((status = 'revoked') = (revoked_at is not null))
    );`);
    // Listing a user's delegations (newest first, keyset on created_at, id).
    this.addSql('create index oauth_delegations_user_created_idx on oauth_delegations (user_id, created_at desc, id desc);');
    // Bulk sign-out touches only the issued delegations of one user.
    this.addSql(`create index oauth_delegations_user_issued_idx on oauth_delegations (user_id, delegation_type) where status = 'issued';`);
  }
}
