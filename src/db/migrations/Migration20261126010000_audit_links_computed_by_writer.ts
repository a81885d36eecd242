import { Migration } from '@mikro-orm/migrations';

/**
 * The chain's links (version 2, unchanged) are now computed by the writer, in Node, before it
 * takes the chain's head: `audit_append_linked_records` (the owner's, SECURITY DEFINER like the
 * append it replaces) locks the head, appends the records only if the head is still the one the
 * links were computed from, and answers where the head is. Measured (docs/BENCHMARKS.md, "Audit
 * trail"): hashing 100 records in PL/pgSQL took 0.7 ms of a `PUT /users` x100, all of it while
 * holding the head every other write of the account waits for.
 *
 * The writer's time is the record's time; the function keeps it monotonic per account (a time
 * before the head's is refused as a stale head is, and the writer links again from the head it is
 * given). `audit_append_records` stays for instances of the previous release during a rolling
 * deploy; nothing of this release calls it.
 */
export class Migration20261126010000_audit_links_computed_by_writer extends Migration {
  override name = 'Migration20261126010000_audit_links_computed_by_writer';

  override up(): void {
    this.addSql(`create function audit_append_linked_records(for_account varchar, expected_position bigint, expected_hash varchar, record_time timestamptz,
                                                            record_ids uuid[], shared_members text, record_contents json, record_hashes varchar[],
                                                            out appended boolean, out head_position bigint, out head_hash varchar, out head_time timestamptz)
      language plpgsql security definer set search_path = public, pg_temp as $$
      begin
        select h.position, h.hash, h.last_time into head_position, head_hash, head_time
          from audit_chain_heads h where h.account_id = for_account for update;
        if not found then
          insert into audit_chain_heads (account_id, position, hash, last_time) values (for_account, 0, '', to_timestamp(0))
            on conflict (account_id) do nothing;
          select h.position, h.hash, h.last_time into head_position, head_hash, head_time
            from audit_chain_heads h where h.account_id = for_account for update;
        end if;
        appended := false;
        -- Links computed from another head, or a time before the head's: the writer links again from this head.
        if expected_position is distinct from head_position or expected_hash is distinct from head_hash
           or record_time is null or record_time < head_time or record_time <> date_trunc('milliseconds', record_time) then
          return;
        end if;
        if cardinality(record_ids) is distinct from json_array_length(record_contents) or cardinality(record_ids) is distinct from cardinality(record_hashes)
           or cardinality(record_ids) = 0 then
          raise exception 'audit append: % ids, % contents and % hashes', cardinality(record_ids), json_array_length(record_contents), cardinality(record_hashes)
            using errcode = '22023';
        end if;

        insert into audit_contexts (account_id, first_position, context) values (for_account, head_position + 1, ('{' || shared_members || '}')::jsonb);
        insert into audit_records (account_id, position, id, execution_time, action, root_resource_type, root_resource_id, actor_type, actor_id,
                                   method_type, method_truncated_token, body, previous_hash, hash, chain_version, context_position)
        select for_account, head_position + r.n, record_ids[r.n], record_time, r.c ->> 0, r.c ->> 1, r.c ->> 2, r.c ->> 3, r.c ->> 4, r.c ->> 5,
               r.c ->> 6, r.c -> 7, case when r.n = 1 then head_hash else record_hashes[r.n - 1] end, record_hashes[r.n], 2, head_position + 1
          from (select e.value::jsonb as c, e.n from json_array_elements(record_contents) with ordinality as e(value, n) offset 0) as r;

        head_position := head_position + cardinality(record_ids);
        head_hash := record_hashes[cardinality(record_hashes)];
        head_time := record_time;
        update audit_chain_heads set position = head_position, hash = head_hash, last_time = head_time where account_id = for_account;
        appended := true;
      end;
    $$;`);
    this.addSql('revoke all on function audit_append_linked_records(varchar, bigint, varchar, timestamptz, uuid[], text, json, varchar[]) from public;');
  }
}
