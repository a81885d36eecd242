import { Migration } from '@mikro-orm/migrations';

export class Migration20261122001300_idempotency_keys extends Migration {
  override name = 'Migration20261122001300_idempotency_keys';

  override up(): void {
    // The first outcome of a write sent with an Idempotency-Key, per credential, for a day.
    // The response (status, a few headers, body) is stored encrypted: it may carry a calendar key.
    this.addSql(`create table idempotency_keys (
      scope varchar(100) not null,
      key varchar(255) not null,
      fingerprint varchar(64) not null,
      state varchar(16) not null check (state in ('running', 'completed')),
      locked_until timestamptz not null,
      response_status smallint,
      response_sealed bytea,
      created_at timestamptz not null default now(),
      expires_at timestamptz not null,
      primary key (scope, key)
    );`);
    // The purge deletes by age.
    this.addSql('create index idempotency_keys_expires_at_idx on idempotency_keys (expires_at);');
  }
}
