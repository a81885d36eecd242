#!/usr/bin/env bash
# The scale-out topology on one machine, for development and CI (docs/operating.md, "Scaling out"):
#
#   primary   127.0.0.1:5432  the existing PostgreSQL cluster (the suite's server); made able to
#                             stream: a `replication` pg_hba entry (a reload, never a restart
#                             unless wal_level/max_wal_senders forbid streaming)
#   replica   127.0.0.1:5433  a hot standby of 5432, made with pg_basebackup, streaming
#   pgbouncer 127.0.0.1:6432  pool_mode = transaction in front of 5432, every database (`*`)
#
# Usage: scripts/topology.sh start|stop|status|env|replica-stop|replica-start
# Runs as root (installs Debian's pgbouncer when missing) or as postgres; the servers run as postgres.
# Idempotent: `start` on a running topology checks it and changes nothing.
set -euo pipefail

PRIMARY_PORT=${TOPOLOGY_PRIMARY_PORT:-5432}
REPLICA_PORT=${TOPOLOGY_REPLICA_PORT:-5433}
BOUNCER_PORT=${TOPOLOGY_BOUNCER_PORT:-6432}
STATE_DIR=${TOPOLOGY_DIR:-/var/lib/postgresql/topology}
REPLICA_DIR=$STATE_DIR/replica
BOUNCER_DIR=$STATE_DIR/pgbouncer
PG_VERSION=${TOPOLOGY_PG_VERSION:-$(ls /usr/lib/postgresql 2>/dev/null | sort -V | tail -n 1)}
PG_BIN=/usr/lib/postgresql/$PG_VERSION/bin
HOST=127.0.0.1

log() { printf 'topology: %s\n' "$*" >&2; }
as_postgres() {
  if [ "$(id -un)" = postgres ]; then "$@"; else runuser -u postgres -- "$@"; fi
}
primary_sql() { psql -h "$HOST" -p "$PRIMARY_PORT" -U postgres -d postgres -XAtqc "$1"; }
replica_sql() { psql -h "$HOST" -p "$REPLICA_PORT" -U postgres -d postgres -XAtqc "$1"; }
wait_ready() {
  local port=$1 what=$2
  for _ in $(seq 1 60); do pg_isready -h "$HOST" -p "$port" -q 2>/dev/null && return 0; sleep 1; done
  log "$what did not become ready on $HOST:$port"
  return 1
}

ensure_pgbouncer_installed() {
  command -v pgbouncer >/dev/null 2>&1 && return 0
  [ "$(id -u)" = 0 ] || { log "pgbouncer is not installed (apt-get install pgbouncer, as root)"; return 1; }
  log "installing pgbouncer (Debian package)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq pgbouncer >/dev/null
  # The package may start its own instance on 6432 with /etc/pgbouncer's config; ours replaces it.
  if [ -x /etc/init.d/pgbouncer ]; then /etc/init.d/pgbouncer stop >/dev/null 2>&1 || true; fi
}

# Streaming needs wal_level >= replica, a free WAL sender and a `replication` pg_hba entry.
ensure_primary_streams() {
  wait_ready "$PRIMARY_PORT" "the primary"
  local hba wal_level senders
  hba=$(primary_sql 'show hba_file')
  if ! grep -Eq "^host[[:space:]]+replication[[:space:]]+all[[:space:]]+$HOST/32[[:space:]]+trust" "$hba"; then
    log "allowing replication connections from $HOST in $hba"
    printf 'host replication all %s/32 trust\n' "$HOST" >>"$hba"
    primary_sql 'select pg_reload_conf()' >/dev/null
  fi
  wal_level=$(primary_sql 'show wal_level')
  senders=$(primary_sql 'show max_wal_senders')
  if [ "$wal_level" = minimal ] || [ "$senders" = 0 ]; then
    log "the primary cannot stream (wal_level=$wal_level, max_wal_senders=$senders): setting replica/10 and restarting it"
    primary_sql "alter system set wal_level = replica" >/dev/null
    primary_sql "alter system set max_wal_senders = 10" >/dev/null
    local data
    data=$(primary_sql 'show data_directory')
    if command -v pg_ctlcluster >/dev/null 2>&1 && pg_lsclusters -h 2>/dev/null | awk '{print $3}' | grep -qx "$PRIMARY_PORT"; then
      pg_ctlcluster --skip-systemctl-redirect "$(pg_lsclusters -h | awk -v p="$PRIMARY_PORT" '$3==p{print $1}')" "$(pg_lsclusters -h | awk -v p="$PRIMARY_PORT" '$3==p{print $2}')" restart
    else
      as_postgres "$PG_BIN/pg_ctl" -D "$data" -w restart >/dev/null
    fi
    wait_ready "$PRIMARY_PORT" "the primary"
  fi
}

replica_running() { [ -f "$REPLICA_DIR/postmaster.pid" ] && as_postgres "$PG_BIN/pg_ctl" -D "$REPLICA_DIR" status >/dev/null 2>&1; }

start_replica() {
  if replica_running; then
    wait_ready "$REPLICA_PORT" "the replica"
    return 0
  fi
  if [ ! -f "$REPLICA_DIR/standby.signal" ]; then
    log "taking a base backup of $HOST:$PRIMARY_PORT into $REPLICA_DIR"
    rm -rf "$REPLICA_DIR"
    mkdir -p "$STATE_DIR" && chown postgres:postgres "$STATE_DIR" 2>/dev/null || true
    # -R writes standby.signal and primary_conninfo; -X stream carries the WAL written meanwhile.
    as_postgres pg_basebackup -h "$HOST" -p "$PRIMARY_PORT" -U postgres -D "$REPLICA_DIR" -R -X stream -c fast
    # A hot standby needs these at least as high as the primary's; Debian keeps the primary's
    # postgresql.conf outside its data directory, so the replica gets its own.
    {
      printf "port = %s\nlisten_addresses = '%s'\nunix_socket_directories = '%s'\n" "$REPLICA_PORT" "$HOST" "$REPLICA_DIR"
      printf "hot_standby = on\nhot_standby_feedback = on\nwal_receiver_status_interval = 1s\n"
      for setting in max_connections max_worker_processes max_wal_senders max_prepared_transactions max_locks_per_transaction; do
        printf '%s = %s\n' "$setting" "$(primary_sql "show $setting")"
      done
      printf "shared_preload_libraries = ''\nlogging_collector = off\n"
    } | as_postgres tee "$REPLICA_DIR/postgresql.conf" >/dev/null
    printf 'local all all trust\nhost all all %s/32 trust\nhost replication all %s/32 trust\n' "$HOST" "$HOST" | as_postgres tee "$REPLICA_DIR/pg_hba.conf" >/dev/null
    : | as_postgres tee "$REPLICA_DIR/pg_ident.conf" >/dev/null
  fi
  log "starting the replica on $HOST:$REPLICA_PORT"
  as_postgres "$PG_BIN/pg_ctl" -D "$REPLICA_DIR" -l "$STATE_DIR/replica.log" -w -t 60 start >/dev/null
  wait_ready "$REPLICA_PORT" "the replica"
  wait_streaming
}

# A replica stopped for long may need WAL the primary has recycled: it then never streams again,
# and a fresh base backup is the way back.
wait_streaming() {
  for _ in $(seq 1 30); do
    [ "$(replica_sql "select count(*) from pg_stat_wal_receiver where status = 'streaming'")" = 1 ] && return 0
    sleep 0.5
  done
  if [ "${REBUILT:-0}" = 1 ]; then log "the replica does not stream from the primary (see $STATE_DIR/replica.log)"; return 1; fi
  log "the replica does not stream (WAL it needs may be gone): taking a fresh base backup"
  stop_replica
  rm -f "$REPLICA_DIR/standby.signal"
  REBUILT=1 start_replica
}

stop_replica() {
  if replica_running; then
    log "stopping the replica"
    as_postgres "$PG_BIN/pg_ctl" -D "$REPLICA_DIR" -m fast -w stop >/dev/null
  fi
}

bouncer_running() { [ -f "$BOUNCER_DIR/pgbouncer.pid" ] && kill -0 "$(cat "$BOUNCER_DIR/pgbouncer.pid")" 2>/dev/null; }

start_bouncer() {
  if bouncer_running; then return 0; fi
  mkdir -p "$BOUNCER_DIR"
  # Every database of the primary (`*`), as the connecting user; trust like the primary itself.
  # Through the primary's Unix socket when it has one here: one TCP hop less per statement.
  local server_host socket_dir
  socket_dir=$(primary_sql 'show unix_socket_directories' | cut -d, -f1)
  server_host=$HOST
  if [ -n "$socket_dir" ] && [ -S "$socket_dir/.s.PGSQL.$PRIMARY_PORT" ]; then server_host=$socket_dir; fi
  cat >"$BOUNCER_DIR/pgbouncer.ini" <<EOF
[databases]
* = host=$server_host port=$PRIMARY_PORT

[pgbouncer]
listen_addr = $HOST
listen_port = $BOUNCER_PORT
unix_socket_dir =
auth_type = trust
auth_file = $BOUNCER_DIR/userlist.txt
admin_users = postgres
pool_mode = transaction
max_client_conn = 2000
default_pool_size = 20
reserve_pool_size = 5
server_idle_timeout = 30
server_check_delay = 10
ignore_startup_parameters = extra_float_digits
logfile = $BOUNCER_DIR/pgbouncer.log
pidfile = $BOUNCER_DIR/pgbouncer.pid
EOF
  printf '"postgres" ""\n' >"$BOUNCER_DIR/userlist.txt"
  chown -R postgres:postgres "$BOUNCER_DIR" 2>/dev/null || true
  log "starting pgbouncer (transaction pooling) on $HOST:$BOUNCER_PORT"
  as_postgres pgbouncer -d -q "$BOUNCER_DIR/pgbouncer.ini"
  wait_ready "$BOUNCER_PORT" "pgbouncer"
}

stop_bouncer() {
  if bouncer_running; then
    log "stopping pgbouncer"
    local pid
    pid=$(cat "$BOUNCER_DIR/pgbouncer.pid")
    kill -INT "$pid"
    for _ in $(seq 1 30); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.2; done
  fi
}

print_env() {
  cat <<EOF
export DATABASE_URL=postgres://postgres@$HOST:$BOUNCER_PORT/postgres
export DATABASE_POOLER=pgbouncer-transaction
export DATABASE_LISTEN_URL=postgres://postgres@$HOST:$PRIMARY_PORT/postgres
export TEST_DATABASE_ADMIN_URL=postgres://postgres@$HOST:$PRIMARY_PORT/postgres
export TEST_REPLICA_URL=postgres://postgres@$HOST:$REPLICA_PORT/postgres
EOF
}

status() {
  printf 'primary   %s:%s  %s\n' "$HOST" "$PRIMARY_PORT" "$(pg_isready -h "$HOST" -p "$PRIMARY_PORT" -q && echo up || echo down)"
  printf 'replica   %s:%s  %s\n' "$HOST" "$REPLICA_PORT" "$(pg_isready -h "$HOST" -p "$REPLICA_PORT" -q && echo "up, in recovery: $(replica_sql 'select pg_is_in_recovery()'), replay paused: $(replica_sql 'select pg_is_wal_replay_paused()')" || echo down)"
  printf 'pgbouncer %s:%s  %s\n' "$HOST" "$BOUNCER_PORT" "$(pg_isready -h "$HOST" -p "$BOUNCER_PORT" -q && echo up || echo down)"
}

case "${1:-}" in
  start)
    ensure_pgbouncer_installed
    ensure_primary_streams
    start_replica
    start_bouncer
    [ "$(replica_sql 'select pg_is_in_recovery()')" = t ] || { log "the server on $REPLICA_PORT is not a standby"; exit 1; }
    status >&2
    ;;
  stop)
    stop_bouncer
    stop_replica
    ;;
  replica-stop) stop_replica ;;
  replica-start) start_replica ;;
  status) status ;;
  env) print_env ;;
  *)
    echo "usage: $0 start|stop|status|env|replica-stop|replica-start" >&2
    exit 2
    ;;
esac
