import { Migration } from '@mikro-orm/migrations';

/**
 * A transaction's records share who acted, how and from where (`executionContext`, `actors`,
 * `method`): half of each record's bytes. They are now stored once per appended batch, in
 * `audit_contexts` (keyed by the batch's first position), and each record keeps only its own part
 * plus `context_position`; `audit_records_full` joins them back, so every reader sees whole bodies
 * (records written before keep their whole body and no context). The chain still covers the whole
 * record: the append function splices the shared text into each record's hashed text.
 */
export class Migration20261125040100_audit_shared_context extends Migration {
  override name = 'Migration20261125040100_audit_shared_context';

  override up(): void {
    this.addSql(`create table audit_contexts (
      account_id varchar(7) not null,
      first_position bigint not null,
      context jsonb not null,
      primary key (account_id, first_position)
    );`);
    this.addSql('alter table audit_records add column context_position bigint null;');
    this.addSql(`create trigger audit_contexts_append_only before update or delete on audit_contexts
      for each row execute function audit_records_append_only();`);
    this.addSql(`create trigger audit_contexts_no_truncate before truncate on audit_contexts
      for each statement execute function audit_records_append_only();`);
    this.addSql(`create view audit_records_full as
      select r.account_id, r.position, r.id, r.execution_time, r.action, r.root_resource_type, r.root_resource_id, r.actor_type, r.actor_id,
             r.method_type, r.method_truncated_token,
             case when r.context_position is null then r.body else c.context || r.body end as body,
             r.previous_hash, r.hash, r.chain_version
        from audit_records r
        left join audit_contexts c on c.account_id = r.account_id and c.first_position = r.context_position;`);

    this.addSql('drop function audit_append_records(varchar, uuid[], json, bytea, bytea);');
    // As migration 20261125040000's, with the batch's shared context given once: `shared_members` is
    // the text of its three members ("executionContext":...,"actors":...,"method":...), spliced at
    // the front of each record's body (which begins {"rootResource":...) for the hashed text, and
    // stored once as the batch's context. The key's pads come as hex text (every driver binds text;
    // PGlite binds a bytea parameter only from bytes).
    this.addSql(`create function audit_append_records(for_account varchar, record_ids uuid[], shared_members text, record_contents json, key_inner_hex text, key_outer_hex text)
      returns void language plpgsql security definer set search_path = public, pg_temp as $$
      declare
        head_position bigint;
        head_hash varchar;
        record_time timestamptz;
        stamped text;
        link varchar;
        hashes varchar[] := '{}';
        item record;
        body_at integer;
        key_inner bytea := decode(key_inner_hex, 'hex');
        key_outer bytea := decode(key_outer_hex, 'hex');
      begin
        if octet_length(key_inner) <> 64 or octet_length(key_outer) <> 64 then
          raise exception 'audit chain key pads must be 64 bytes' using errcode = '22023';
        end if;
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
        stamped := to_char(record_time at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"');
        link := head_hash;
        for item in
          select e.n, e.value::text as content
            from json_array_elements(record_contents) with ordinality as e(value, n)
           order by e.n
        loop
          -- The body is the last element and its first key is rootResource; the elements before it are
          -- strings or nulls, in which that text cannot occur unescaped.
          body_at := strpos(item.content, ',{"rootResource":');
          if body_at = 0 then
            raise exception 'audit record content without a body' using errcode = '22023';
          end if;
          link := encode(sha256(key_outer || sha256(key_inner || convert_to(
            link || E'\\n' || '[' || to_json(for_account::text) || ',' || to_json((head_position + item.n)::text) || ',' || to_json(record_ids[item.n]::text)
              || ',' || to_json(stamped) || ',' || substr(item.content, 2, body_at - 1) || '{' || shared_members || ',' || substr(item.content, body_at + 2),
            'UTF8'))), 'hex');
          hashes := hashes || link;
        end loop;

        insert into audit_contexts (account_id, first_position, context) values (for_account, head_position + 1, ('{' || shared_members || '}')::jsonb);
        insert into audit_records (account_id, position, id, execution_time, action, root_resource_type, root_resource_id, actor_type, actor_id,
                                   method_type, method_truncated_token, body, previous_hash, hash, chain_version, context_position)
        select for_account, head_position + r.n, record_ids[r.n], record_time, r.c ->> 0, r.c ->> 1, r.c ->> 2, r.c ->> 3, r.c ->> 4, r.c ->> 5,
               r.c ->> 6, r.c -> 7, case when r.n = 1 then head_hash else hashes[r.n - 1] end, hashes[r.n], 2, head_position + 1
          from (select e.value::jsonb as c, e.n from json_array_elements(record_contents) with ordinality as e(value, n) offset 0) as r;

        update audit_chain_heads set position = head_position + cardinality(hashes), hash = link, last_time = record_time
         where account_id = for_account;
      end;
    $$;`);

    // As migration 20261125040000's, also removing the contexts no remaining record uses: only the
    // batch the first remaining record belongs to can straddle the cut.
    this.addSql(`create or replace function audit_purge_batch(for_account varchar, cutoff timestamptz, through_position bigint, batch_size integer,
                                                   out purged bigint, out anchored_at bigint)
      language plpgsql security definer set search_path = public, pg_temp as $$
      declare
        floor_days integer;
        last_position bigint;
        last_hash varchar;
        kept_context bigint;
      begin
        select p.min_retention_days into floor_days from audit_policy p;
        if coalesce(floor_days, 0) > 0 and cutoff > now() - make_interval(days => floor_days) then
          raise exception 'audit purge cutoff % is younger than the minimum retention of % day(s)', cutoff, floor_days using errcode = '42501';
        end if;
        perform 1 from audit_chain_heads h where h.account_id = for_account for update;
        purged := 0;
        anchored_at := null;
        select r.position, r.hash into last_position, last_hash
          from audit_records r
         where r.account_id = for_account and r.execution_time < cutoff and r.position <= through_position
           and r.position <= (select min(m.position) from audit_records m where m.account_id = for_account) + batch_size - 1
         order by r.position desc limit 1;
        if last_position is null then
          return;
        end if;
        perform set_config('audit.purging', 'on', true);
        with gone as (delete from audit_records r where r.account_id = for_account and r.position <= last_position returning 1)
        select count(*) into purged from gone;
        select r.context_position into kept_context from audit_records r where r.account_id = for_account and r.position = last_position + 1;
        delete from audit_contexts c where c.account_id = for_account and c.first_position <= last_position and c.first_position is distinct from kept_context;
        perform set_config('audit.purging', 'off', true);
        update audit_chain_heads set anchor_position = last_position, anchor_hash = last_hash where account_id = for_account;
        anchored_at := last_position;
      end;
    $$;`);
    this.addSql('revoke all on function audit_append_records(varchar, uuid[], text, json, text, text) from public;');
  }
}
