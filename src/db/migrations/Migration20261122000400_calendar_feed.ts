import { Migration } from '@mikro-orm/migrations';

export class Migration20261122000400_calendar_feed extends Migration {
  override name = 'Migration20261122000400_calendar_feed';

  override up(): void {
    // One private calendar key per user. The key itself is never stored: it is
    // HMAC(server secret, user id + nonce), so a dump of this table yields no working feed URL.
    // `key_digest` (SHA-256 of the key) is what a feed request is looked up by.
    this.addSql(`create table calendar_feed_keys (
      user_id varchar(7) primary key references users (id),
      nonce varchar(64) not null,
      key_digest varchar(64) not null,
      created_at timestamptz not null default now(),
      rotated_at timestamptz not null default now()
    );`);
    this.addSql('create unique index calendar_feed_keys_digest_uniq on calendar_feed_keys (key_digest);');
    this.addSql(`create table oncall_shifts (
      id uuid primary key,
      user_id varchar(7) not null references users (id),
      starts_at timestamptz not null,
      ends_at timestamptz not null,
      summary varchar(255) not null,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now(),
      constraint oncall_shifts_ends_after_start check (ends_at > starts_at)
    );`);
    this.addSql('create index oncall_shifts_user_ends_idx on oncall_shifts (user_id, ends_at);');
  }
}
