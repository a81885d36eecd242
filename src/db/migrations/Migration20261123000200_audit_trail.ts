import { Migration } from '@mikro-orm/migrations';

export class Migration20261123000200_audit_trail extends Migration {
  override name = 'Migration20261123000200_audit_trail';

  override up(): void {
    // One row per recorded change, chained per account: `position` counts the account's records
    // from 1 with no gap, and `hash` covers the record and the previous record's hash.
    this.addSql(`create table audit_records (
      account_id varchar(7) not null references accounts (id),
      position bigint not null,
      id uuid not null,
      execution_time timestamptz not null,
      action varchar(64) not null,
      root_resource_type varchar(64) not null,
      root_resource_id varchar(100) not null,
      actor_type varchar(64) null,
      actor_id varchar(100) null,
      method_type varchar(32) not null,
      method_truncated_token varchar(4) null,
      body jsonb not null,
      previous_hash varchar(64) not null,
      hash varchar(64) not null,
      primary key (account_id, position)
    );`);
    // The reads walk a window of the account's records (or one user's) newest first: positions and
    // times rise together in a chain, so (execution_time, position) is the chain's order and a
    // window, however old, is one range of these indexes. Ids are random UUIDs, looked up by no route.
    this.addSql('create index audit_records_time_idx on audit_records (account_id, execution_time desc, position desc);');
    this.addSql('create index audit_records_root_resource_idx on audit_records (account_id, root_resource_type, root_resource_id, execution_time desc, position desc);');

    // The head of each account's chain: locked by every writer of the account (the last lock of a
    // write), so two transactions never extend the chain from the same record. The purge moves
    // the anchor: the position and hash the first remaining record follows.
    this.addSql(`create table audit_chain_heads (
      account_id varchar(7) primary key references accounts (id),
      position bigint not null,
      hash varchar(64) not null,
      last_time timestamptz not null,
      anchor_position bigint not null default 0,
      anchor_hash varchar(64) not null default ''
    );`);

    // Append-only: the retention purge, which announces itself with a transaction-local setting,
    // is the only statement that may delete; nothing may update or truncate.
    this.addSql(`create function audit_records_append_only() returns trigger language plpgsql as $$
      begin
        if tg_op = 'DELETE' and current_setting('audit.purging', true) = 'on' then
          return old;
        end if;
        raise exception 'audit records are append-only (% refused)', tg_op using errcode = '42501';
      end;
    $$;`);
    this.addSql(`create trigger audit_records_append_only before update or delete on audit_records
      for each row execute function audit_records_append_only();`);
    this.addSql(`create trigger audit_records_no_truncate before truncate on audit_records
      for each statement execute function audit_records_append_only();`);
  }
}
