import { Migration } from '@mikro-orm/migrations';

/**
 * What a sign-in session was made by (SPEC section 17, `User.signInSessions`): the method, the
 * identity provider, the browser's user agent and address, kept beside the authorization server's
 * Session record and found by its uid's digest, which stays the same when the library renews the
 * session's cookie value. `id` is the session's public id: unrelated to any secret, so listing it
 * gives nothing to replay. Sessions made before this carry no row and get one at their next save.
 */
export class Migration20261125070000_sign_in_sessions extends Migration {
  override name = 'Migration20261125070000_sign_in_sessions';

  override up(): void {
    this.addSql(`create table sign_in_sessions (
      id uuid primary key default gen_random_uuid(),
      session_uid_digest varchar(64) not null unique,
      user_id varchar(7) not null,
      method varchar(20) not null check (method in ('password', 'single_sign_on')),
      identity_provider text null,
      user_agent text null,
      remote_address text null,
      signed_in_at timestamptz(3) not null default now(),
      last_active_at timestamptz(3) not null default now()
    );`);
    this.addSql('create index sign_in_sessions_user_idx on sign_in_sessions (user_id);');
  }

  override down(): void {
    this.addSql('drop table sign_in_sessions;');
  }
}
