import { Migration } from '@mikro-orm/migrations';

/**
 * Issue 32's cost: the trail is stored one row per appended batch (one write transaction of one
 * account), not one row per record. A record's own part (its id, action, root resource and the
 * rest of its body) is one element of the batch's `records`, a JSON array kept as text exactly as
 * hashed (compressed when long); who acted, how and from where is the batch's `context`, once.
 * The chain (version 3) links batches: one HMAC over the batch's bytes instead of one per record,
 * and one heap row with two index entries instead of a wide row with three per record.
 *
 * - `records` is the array's UTF-8 bytes; `record_offsets` the byte offset of each element (from
 *   0, with one more entry: the array's length), so a reader cuts one record out without parsing
 *   the whole batch. `actions` lists the batch's distinct actions and `record_root_types` /
 *   `record_root_ids` each record's root, so a filtered read skips batches holding no match.
 * - `audit_record_roots` is the narrow index the per-user reads need: one (root type, root id,
 *   time, position) per record. Random inserts into it cost a 100-record write as much as the rest
 *   of its trail, so it is filled after commit, from the batches' root arrays, by the owner's
 *   `audit_index_roots` (servers call it every half second); `audit_root_index_heads` says how far
 *   each account is indexed, and a per-user read takes the batches past that from the batches
 *   themselves. It is derived data; `audit verify` checks it against the records.
 * - Records written before (chain versions 1 and 2) become batches of one record, their hashes
 *   untouched; their element carries the columns those versions hashed (actor and method), so they
 *   keep verifying.
 * - `audit_records` is now a view: one row per record with the columns and whole body the table
 *   had, for operators and tests; the service reads the batches directly.
 */
export class Migration20261126030000_audit_batches extends Migration {
  override name = 'Migration20261126030000_audit_batches';

  override up(): void {
    this.addSql(`create table audit_batches (
      account_id varchar(7) not null references accounts (id),
      first_position bigint not null,
      last_position bigint not null,
      execution_time timestamptz not null,
      context text not null,
      records bytea not null,
      record_offsets integer[] not null,
      actions text[] not null,
      record_root_types text[] not null,
      record_root_ids text[] not null,
      previous_hash varchar(64) not null,
      hash varchar(64) not null,
      chain_version smallint not null,
      primary key (account_id, first_position),
      check (last_position >= first_position and cardinality(record_offsets) = last_position - first_position + 2
             and cardinality(record_root_types) = last_position - first_position + 1 and cardinality(record_root_ids) = last_position - first_position + 1)
    );`);
    this.addSql('create index audit_batches_time_idx on audit_batches (account_id, execution_time desc, first_position desc);');
    // lz4 is cheaper than pglz for the same saving; a server built without it keeps the default.
    this.addSql(`do $$ begin
      alter table audit_batches alter column records set compression lz4;
    exception when others then null;
    end $$;`);

    this.addSql(`create table audit_record_roots (
      account_id varchar(7) not null,
      root_resource_type varchar(64) not null,
      root_resource_id varchar(64) not null,
      execution_time timestamptz not null,
      position bigint not null,
      first_position bigint not null,
      primary key (account_id, root_resource_type, root_resource_id, execution_time, position)
    );`);
    // The purge finds the oldest roots by time; a block-range index costs the appends almost nothing.
    this.addSql('create index audit_record_roots_time_brin on audit_record_roots using brin (execution_time);');

    this.addSql(`insert into audit_batches (account_id, first_position, last_position, execution_time, context, records, record_offsets, actions,
                                            record_root_types, record_root_ids, previous_hash, hash, chain_version)
      select r.account_id, r.position, r.position, r.execution_time, parts.context, convert_to('[' || parts.element || ']', 'UTF8'),
             array[1, octet_length(convert_to(parts.element, 'UTF8')) + 2], array[r.action], array[r.root_resource_type], array[r.root_resource_id],
             r.previous_hash, r.hash, r.chain_version
        from audit_records_full r
        cross join lateral (select
          jsonb_build_object('executionContext', r.body -> 'executionContext', 'actors', r.body -> 'actors', 'method', r.body -> 'method')::text as context,
          jsonb_build_array(r.id::text, r.action, r.root_resource_type, r.root_resource_id, r.body - 'executionContext' - 'actors' - 'method',
                            r.actor_type, r.actor_id, r.method_type, r.method_truncated_token)::text as element) parts;`);
    this.addSql(`insert into audit_record_roots (account_id, root_resource_type, root_resource_id, execution_time, position, first_position)
      select account_id, root_resource_type, root_resource_id, execution_time, position, position from audit_records;`);
    this.addSql(`create table audit_root_index_heads (
      account_id varchar(7) primary key,
      through_position bigint not null
    );`);
    this.addSql('insert into audit_root_index_heads (account_id, through_position) select account_id, position from audit_chain_heads;');

    this.addSql('drop view audit_records_full;');
    this.addSql('drop function audit_append_records(varchar, uuid[], text, json, text, text);');
    this.addSql('drop table audit_contexts;');
    this.addSql('drop table audit_records;');

    for (const table of ['audit_batches', 'audit_record_roots']) {
      this.addSql(`create trigger ${table}_append_only before update or delete on ${table} for each row execute function audit_records_append_only();`);
      this.addSql(`create trigger ${table}_no_truncate before truncate on ${table} for each statement execute function audit_records_append_only();`);
    }

    // One row per record, as the table was: for people and tests. Element 4 is the record's own part
    // of the body; elements 5 to 8, present in records of chain versions 1 and 2, the actor and
    // method columns those versions hashed.
    this.addSql(`create view audit_records as
      select b.account_id, b.first_position + e.n - 1 as position, (e.element ->> 0)::uuid as id, b.execution_time,
             e.element ->> 1 as action, e.element ->> 2 as root_resource_type, e.element ->> 3 as root_resource_id,
             case when b.chain_version < 3 then e.element ->> 5 else b.context::jsonb -> 'actors' -> 0 ->> 'type' end as actor_type,
             case when b.chain_version < 3 then e.element ->> 6 else b.context::jsonb -> 'actors' -> 0 ->> 'id' end as actor_id,
             case when b.chain_version < 3 then e.element ->> 7 else b.context::jsonb -> 'method' ->> 'type' end as method_type,
             case when b.chain_version < 3 then e.element ->> 8 else b.context::jsonb -> 'method' ->> 'truncatedToken' end as method_truncated_token,
             b.context::jsonb || (e.element -> 4) as body,
             b.chain_version, b.first_position as batch_position, b.previous_hash as batch_previous_hash, b.hash as batch_hash
        from audit_batches b
        cross join lateral (
          select n, convert_from(substring(b.records from b.record_offsets[n] + 1 for b.record_offsets[n + 1] - b.record_offsets[n] - 1), 'UTF8')::jsonb as element
            from generate_series(1, (b.last_position - b.first_position + 1)::integer) as n
        ) e;`);

    // Appends one batch under the account's chain head: its records' own parts (the UTF-8 bytes of a
    // JSON array, \`records\`, whose elements begin at \`record_offsets\`) and its shared \`context\` (a JSON
    // object's text), each stored as given, and one root per record. The link is the HMAC of the
    // previous hash and the batch's bytes, sha256(opad || sha256(ipad || message)) from the caller's key pads
    // (hex text: every driver binds text): the key never rests in the database.
    this.addSql(`create function audit_append_batch(for_account varchar, context text, records bytea, record_offsets integer[], actions text[],
                                                   root_types text[], root_ids text[], key_inner_hex text, key_outer_hex text)
      returns void language plpgsql security definer set search_path = public, pg_temp as $$
      declare
        record_count integer := cardinality(root_ids);
        head_position bigint;
        head_hash varchar;
        record_time timestamptz;
        link varchar;
        key_inner bytea := decode(key_inner_hex, 'hex');
        key_outer bytea := decode(key_outer_hex, 'hex');
      begin
        if octet_length(key_inner) <> 64 or octet_length(key_outer) <> 64 then
          raise exception 'audit chain key pads must be 64 bytes' using errcode = '22023';
        end if;
        if coalesce(record_count, 0) < 1 or cardinality(root_types) <> record_count or cardinality(record_offsets) <> record_count + 1
           or record_offsets[1] <> 1 or record_offsets[record_count + 1] <> octet_length(records)
           or get_byte(records, 0) <> 91 or get_byte(records, octet_length(records) - 1) <> 93 then
          raise exception 'audit batch malformed: % root(s), % offset(s)', record_count, cardinality(record_offsets) using errcode = '22023';
        end if;
        if json_typeof(context::json) <> 'object' then
          raise exception 'audit batch context must be a JSON object' using errcode = '22023';
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
        link := encode(sha256(key_outer || sha256(key_inner || convert_to(
          head_hash || E'\\n' || '[' || to_json(for_account::text) || ',' || to_json((head_position + 1)::text) || ','
            || to_json((head_position + record_count)::text) || ','
            || to_json(to_char(record_time at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')) || ',' || context || ',', 'UTF8')
          || records || '\\x5d'::bytea)), 'hex');
        insert into audit_batches (account_id, first_position, last_position, execution_time, context, records, record_offsets, actions,
                                   record_root_types, record_root_ids, previous_hash, hash, chain_version)
          values (for_account, head_position + 1, head_position + record_count, record_time, context, records, record_offsets, actions,
                  root_types, root_ids, head_hash, link, 3);
        update audit_chain_heads set position = head_position + record_count, hash = link, last_time = record_time
         where account_id = for_account;
      end;
    $$;`);
    this.addSql('revoke all on function audit_append_batch(varchar, text, bytea, integer[], text[], text[], text[], text, text) from public;');

    // Fills the roots index of an account from the batches past its index head, at most
    // \`max_batches\` of them, and moves that head; another instance indexing the account meanwhile
    // is left to it (null). Everything it writes comes from the chain's own rows, so any role may
    // call it. Batches commit in position order (the chain head's lock), so none is skipped.
    this.addSql(`create function audit_index_roots(for_account varchar, max_batches integer) returns bigint
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
        with pending as (
          select b.first_position, b.last_position, b.execution_time, b.record_root_types, b.record_root_ids
            from audit_batches b where b.account_id = for_account and b.first_position > indexed
           order by b.first_position limit max_batches
        ), inserted as (
          insert into audit_record_roots (account_id, root_resource_type, root_resource_id, execution_time, position, first_position)
          select for_account, r.root_type, r.root_id, p.execution_time, p.first_position + r.n - 1, p.first_position
            from pending p cross join lateral unnest(p.record_root_types, p.record_root_ids) with ordinality as r(root_type, root_id, n)
          on conflict do nothing
        )
        select max(p.last_position) into reached from pending p;
        if reached is not null then
          update audit_root_index_heads set through_position = reached where account_id = for_account;
        end if;
        return coalesce(reached, indexed);
      end;
    $$;`);
    this.addSql('revoke all on function audit_index_roots(varchar, integer) from public;');

    // As migration 20261125040100's, by whole batches: the anchor is always a batch's end.
    this.addSql(`create or replace function audit_purge_batch(for_account varchar, cutoff timestamptz, through_position bigint, batch_size integer,
                                                   out purged bigint, out anchored_at bigint)
      language plpgsql security definer set search_path = public, pg_temp as $$
      declare
        floor_days integer;
        cut_position bigint;
        cut_hash varchar;
        cut_time timestamptz;
        first_kept bigint;
      begin
        select p.min_retention_days into floor_days from audit_policy p;
        if coalesce(floor_days, 0) > 0 and cutoff > now() - make_interval(days => floor_days) then
          raise exception 'audit purge cutoff % is younger than the minimum retention of % day(s)', cutoff, floor_days using errcode = '42501';
        end if;
        perform 1 from audit_chain_heads h where h.account_id = for_account for update;
        purged := 0;
        anchored_at := null;
        select min(m.first_position) into first_kept from audit_batches m where m.account_id = for_account;
        -- At least the oldest batch when it is old enough, however many records it holds.
        select b.last_position, b.hash, b.execution_time into cut_position, cut_hash, cut_time
          from audit_batches b
         where b.account_id = for_account and b.execution_time < cutoff and b.last_position <= through_position
           and (b.first_position = first_kept or b.last_position <= first_kept + batch_size - 1)
         order by b.first_position desc limit 1;
        if cut_position is null then
          return;
        end if;
        perform set_config('audit.purging', 'on', true);
        delete from audit_batches b where b.account_id = for_account and b.first_position <= cut_position;
        delete from audit_record_roots r where r.account_id = for_account and r.execution_time <= cut_time and r.position <= cut_position;
        perform set_config('audit.purging', 'off', true);
        -- Nothing purged is left to index.
        update audit_root_index_heads i set through_position = greatest(i.through_position, cut_position) where i.account_id = for_account;
        purged := cut_position - first_kept + 1;
        update audit_chain_heads set anchor_position = cut_position, anchor_hash = cut_hash where account_id = for_account;
        anchored_at := cut_position;
      end;
    $$;`);
  }
}
