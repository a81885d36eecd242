import { Migration } from '@mikro-orm/migrations';

export class Migration20261124010000_audit_append_function extends Migration {
  override name = 'Migration20261124010000_audit_append_function';

  override up(): void {
    // Appending a transaction's records in one round trip: the chain head's lock, the chain's
    // SHA-256 links and the insert all happen where the head is, so a write pays one statement
    // (planned once per connection, as a function's statements are) instead of a lock round trip,
    // then a statement of a size that grows with the batch. The digest is the one `chainHash`
    // (src/audit/audit-chain.ts) computes when it verifies: SHA-256 over the previous hash, a line
    // feed and the JSON array [account, position, id, time, ...content]. The caller sends the
    // records' ids and, as one JSON array, their contents (`chainedContent`), whose text the `json`
    // type keeps verbatim; the account, position, id and time (ASCII, needing no escape) are added here.
    //
    // The head is the last lock of a write (docs/ARCHITECTURE.md, "Lock order"). A writer that
    // waited for it reads the head as the previous writer committed it (FOR UPDATE returns the
    // newest version, and each statement of a function sees what committed before it), so no two
    // transactions extend the chain from the same record. An account's first record creates the
    // head; two first writers meet on its primary key and the second then waits on the first's lock.
    this.addSql(`create function audit_append_records(for_account varchar, record_ids uuid[], record_contents json) returns void language plpgsql as $$
      declare
        head_position bigint;
        head_hash varchar;
        record_time timestamptz;
        stamped text;
        link varchar;
        hashes varchar[] := '{}';
        item record;
      begin
        select h.position, h.hash, greatest(date_trunc('milliseconds', clock_timestamp()), h.last_time)
          into head_position, head_hash, record_time
          from audit_chain_heads h where h.account_id = for_account for update;
        if not found then
          insert into audit_chain_heads (account_id, position, hash, last_time) values (for_account, 0, '', to_timestamp(0))
            on conflict (account_id) do nothing;
          select h.position, h.hash, greatest(date_trunc('milliseconds', clock_timestamp()), h.last_time)
            into head_position, head_hash, record_time
            from audit_chain_heads h where h.account_id = for_account for update;
        end if;
        -- As JavaScript's Date.prototype.toISOString writes it: the time the verifier hashes.
        stamped := to_char(record_time at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"');
        link := head_hash;
        for item in
          select e.n, e.value::text as content
            from json_array_elements(record_contents) with ordinality as e(value, n)
           order by e.n
        loop
          link := encode(sha256(convert_to(
            link || E'\\n' || '[' || to_json(for_account::text) || ',' || to_json((head_position + item.n)::text) || ',' || to_json(record_ids[item.n]::text)
              || ',' || to_json(stamped) || ',' || substr(item.content, 2),
            'UTF8')), 'hex');
          hashes := hashes || link;
        end loop;

        -- The contents parsed once each (OFFSET 0 keeps the subquery, so c is not re-parsed for every column).
        insert into audit_records (account_id, position, id, execution_time, action, root_resource_type, root_resource_id, actor_type, actor_id,
                                   method_type, method_truncated_token, body, previous_hash, hash)
        select for_account, head_position + r.n, record_ids[r.n], record_time, r.c ->> 0, r.c ->> 1, r.c ->> 2, r.c ->> 3, r.c ->> 4, r.c ->> 5,
               r.c ->> 6, r.c -> 7, case when r.n = 1 then head_hash else hashes[r.n - 1] end, hashes[r.n]
          from (select e.value::jsonb as c, e.n from json_array_elements(record_contents) with ordinality as e(value, n) offset 0) as r;

        update audit_chain_heads set position = head_position + cardinality(hashes), hash = link, last_time = record_time
         where account_id = for_account;
      end;
    $$;`);
  }

  override down(): void {
    this.addSql('drop function audit_append_records(varchar, uuid[], json);');
  }
}
