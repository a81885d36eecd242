import { Migration } from '@mikro-orm/migrations';

/**
 * The roots index is most of the trail's database time (about 0.7 ms per 100-record write, off the
 * request's path but not off the machine's CPU). `audit_index_roots` inserted its rows with
 * `ON CONFLICT DO NOTHING`, whose speculative insertion cost about 60% more per row than a plain
 * insert (7,500 rows: 45-50 ms against 27-30 ms, docs/BENCHMARKS.md). Conflicts do not happen in
 * normal operation: the index head is locked while its rows are written, and moves with them in the
 * same transaction. So the rows now go in with a plain insert, and the conflict-tolerant insert is
 * kept for when that fails on rows already there (written by hand, restored from a dump), so the
 * index still catches up instead of failing every half second.
 */
export class Migration20261128070000_audit_roots_plain_insert extends Migration {
  override name = 'Migration20261128070000_audit_roots_plain_insert';

  override up(): void {
    // As migration 20261126030000's, but for the insert; `create or replace` keeps its owner and grants.
    this.addSql(`create or replace function audit_index_roots(for_account varchar, max_batches integer) returns bigint
      language plpgsql security definer set search_path = public, pg_temp as $$
      declare
        indexed bigint;
        reached bigint;
      begin
        insert into audit_root_index_heads (account_id, through_position) values (for_account, 0) on conflict (account_id) do nothing;
        select i.through_position into indexed from audit_root_index_heads i where i.account_id = for_account for update skip locked;
        if not found then
          return null;
        end if;
        select max(p.last_position) into reached from (
          select b.last_position from audit_batches b where b.account_id = for_account and b.first_position > indexed
           order by b.first_position limit max_batches
        ) p;
        if reached is null then
          return indexed;
        end if;
        -- Batches commit in position order (the chain head's lock), and none commits at or below
        -- the chain head meanwhile: (indexed, reached] is exactly the batches counted above.
        begin
          insert into audit_record_roots (account_id, root_resource_type, root_resource_id, execution_time, position, first_position)
          select for_account, r.root_type, r.root_id, b.execution_time, b.first_position + r.n - 1, b.first_position
            from audit_batches b cross join lateral unnest(b.record_root_types, b.record_root_ids) with ordinality as r(root_type, root_id, n)
           where b.account_id = for_account and b.first_position > indexed and b.first_position <= reached;
        exception when unique_violation then
          insert into audit_record_roots (account_id, root_resource_type, root_resource_id, execution_time, position, first_position)
          select for_account, r.root_type, r.root_id, b.execution_time, b.first_position + r.n - 1, b.first_position
            from audit_batches b cross join lateral unnest(b.record_root_types, b.record_root_ids) with ordinality as r(root_type, root_id, n)
           where b.account_id = for_account and b.first_position > indexed and b.first_position <= reached
          on conflict do nothing;
        end;
        update audit_root_index_heads set through_position = reached where account_id = for_account;
        return reached;
      end;
    $$;`);
  }
}
