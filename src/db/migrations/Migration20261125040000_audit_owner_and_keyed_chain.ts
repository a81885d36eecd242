import { Migration } from '@mikro-orm/migrations';

/**
 * SPEC section 19: the trail holds against the app's own database role.
 *
 * - The chain becomes an HMAC-SHA-256 (version 2; records of version 1 keep their SHA-256 links and
 *   keep verifying). The key never rests in the database: the caller sends its two padded forms
 *   (K xor ipad, K xor opad) with each append, and HMAC is computed from PostgreSQL's own sha256().
 * - Appending and purging are functions of the owner (SECURITY DEFINER, fixed search_path): the only
 *   paths that write records and move heads. An app role (`accessctl db grant-app-role`) gets
 *   EXECUTE on the append and purge functions and SELECT on the tables, nothing more.
 * - The append-only trigger no longer trusts a setting any session may set: a deletion passes only
 *   when the purge function, running as the table's owner, announces it.
 * - The purge refuses cutoffs younger than `audit_policy.min_retention_days` (set by the owner), so
 *   a role allowed to call it cannot use it to erase recent history.
 */
export class Migration20261125040000_audit_owner_and_keyed_chain extends Migration {
  override name = 'Migration20261125040000_audit_owner_and_keyed_chain';

  override up(): void {
    this.addSql('alter table audit_records add column chain_version smallint not null default 1;');

    this.addSql(`create table audit_policy (
      singleton boolean primary key default true check (singleton),
      min_retention_days integer not null default 0 check (min_retention_days >= 0)
    );`);
    this.addSql('insert into audit_policy (singleton) values (true);');

    this.addSql(`create or replace function audit_records_append_only() returns trigger language plpgsql as $$
      begin
        if tg_op = 'DELETE' and current_setting('audit.purging', true) = 'on'
           and current_user = (select pg_get_userbyid(c.relowner) from pg_class c where c.oid = tg_relid) then
          return old;
        end if;
        raise exception 'audit records are append-only (% refused)', tg_op using errcode = '42501';
      end;
    $$;`);

    this.addSql('drop function audit_append_records(varchar, uuid[], json);');
    // As the previous version (migration 20261124010000), with the link an HMAC: sha256(opad || sha256(ipad || message)).
    this.addSql(`create function audit_append_records(for_account varchar, record_ids uuid[], record_contents json, key_inner bytea, key_outer bytea)
      returns void language plpgsql security definer set search_path = public, pg_temp as $$
      declare
        head_position bigint;
        head_hash varchar;
        record_time timestamptz;
        stamped text;
        link varchar;
        hashes varchar[] := '{}';
        item record;
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
          link := encode(sha256(key_outer || sha256(key_inner || convert_to(
            link || E'\\n' || '[' || to_json(for_account::text) || ',' || to_json((head_position + item.n)::text) || ',' || to_json(record_ids[item.n]::text)
              || ',' || to_json(stamped) || ',' || substr(item.content, 2),
            'UTF8'))), 'hex');
          hashes := hashes || link;
        end loop;

        insert into audit_records (account_id, position, id, execution_time, action, root_resource_type, root_resource_id, actor_type, actor_id,
                                   method_type, method_truncated_token, body, previous_hash, hash, chain_version)
        select for_account, head_position + r.n, record_ids[r.n], record_time, r.c ->> 0, r.c ->> 1, r.c ->> 2, r.c ->> 3, r.c ->> 4, r.c ->> 5,
               r.c ->> 6, r.c -> 7, case when r.n = 1 then head_hash else hashes[r.n - 1] end, hashes[r.n], 2
          from (select e.value::jsonb as c, e.n from json_array_elements(record_contents) with ordinality as e(value, n) offset 0) as r;

        update audit_chain_heads set position = head_position + cardinality(hashes), hash = link, last_time = record_time
         where account_id = for_account;
      end;
    $$;`);

    // One batch of the retention purge: under the chain head's lock, the account's records older
    // than the cutoff (and not after through_position), at most batch_size of them, are deleted and
    // the anchor moves to the last one. Returns how many went and the anchor's new position.
    this.addSql(`create function audit_purge_batch(for_account varchar, cutoff timestamptz, through_position bigint, batch_size integer,
                                                   out purged bigint, out anchored_at bigint)
      language plpgsql security definer set search_path = public, pg_temp as $$
      declare
        floor_days integer;
        last_position bigint;
        last_hash varchar;
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
        perform set_config('audit.purging', 'off', true);
        update audit_chain_heads set anchor_position = last_position, anchor_hash = last_hash where account_id = for_account;
        anchored_at := last_position;
      end;
    $$;`);
    this.addSql('revoke all on function audit_append_records(varchar, uuid[], json, bytea, bytea) from public;');
    this.addSql('revoke all on function audit_purge_batch(varchar, timestamptz, bigint, integer) from public;');
  }
}
