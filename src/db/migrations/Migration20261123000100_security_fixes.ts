import { Migration } from '@mikro-orm/migrations';

/**
 * Issue 22 (credential takeover and least privilege):
 * - `sign_in_failures`: failed sign-in (and password-change) attempts per (email, address) pair
 *   and per email, with the time of the last one, from which the back-off is computed.
 * - `oauth_server_records.user_id`: the user of a sign-in session, so a password change (or any
 *   "sign this user out everywhere") can end the user's sessions without unsealing every record.
 * - `password_changed`: a revocation reason.
 */
export class Migration20261123000100_security_fixes extends Migration {
  override name = 'Migration20261123000100_security_fixes';

  override up(): void {
    this.addSql(`create table sign_in_failures (
      bucket varchar(80) primary key,
      failures integer not null,
      last_failed_at timestamptz(3) not null
    );`);
    this.addSql('alter table oauth_server_records add column user_id varchar(7) null;');
    this.addSql('create index oauth_server_records_user_idx on oauth_server_records (user_id) where user_id is not null;');
    this.addSql('alter table oauth_delegations drop constraint oauth_delegations_revocation_reason_check;');
    this.addSql(`alter table oauth_delegations add constraint oauth_delegations_revocation_reason_check
      check (revocation_reason in ('sign_out','user_deleted','grant_revoked','app_deleted','password_changed'));`);
  }
}
