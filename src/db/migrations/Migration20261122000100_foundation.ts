import { Migration } from '@mikro-orm/migrations';

export class Migration20261122000100_foundation extends Migration {
  override name = 'Migration20261122000100_foundation';

  override up(): void {
    this.addSql('create extension if not exists pg_trgm;');
    this.addSql(`create table accounts (
      id varchar(7) primary key,
      name varchar(255) not null,
      time_zone varchar(64) not null default 'Etc/UTC',
      created_at timestamptz not null default now()
    );`);
    this.addSql(`create table users (
      id varchar(7) primary key,
      account_id varchar(7) not null references accounts (id),
      name varchar(100) not null,
      email varchar(100) not null,
      time_zone varchar(64) not null,
      color varchar(32) not null,
      role varchar(32) not null check (role in ('owner','admin','user','limited_user','observer','restricted_access','read_only_user','read_only_limited_user')),
      description text null,
      job_title varchar(100) null,
      avatar_url varchar(2048) null,
      invitation_sent boolean not null default false,
      created_via_sso boolean not null default false,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now(),
      deleted_at timestamptz null
    );`);
    // Email is unique per account ignoring case, among live users only: a tombstone keeps its id, not its address.
    this.addSql('create unique index users_account_email_live_uniq on users (account_id, lower(email)) where deleted_at is null;');
    this.addSql('create index users_account_name_id_live_idx on users (account_id, name, id) where deleted_at is null;');
    this.addSql('create index users_name_trgm_idx on users using gin (name gin_trgm_ops);');
    this.addSql('create index users_email_trgm_idx on users using gin (email gin_trgm_ops);');
    this.addSql(`create table api_keys (
      id varchar(7) primary key,
      account_id varchar(7) not null references accounts (id),
      user_id varchar(7) null references users (id),
      read_only boolean not null default false,
      token_digest varchar(64) not null unique,
      description varchar(255) null,
      created_at timestamptz not null default now(),
      revoked_at timestamptz null
    );`);
    this.addSql('create index api_keys_user_idx on api_keys (user_id) where revoked_at is null;');
  }
}
