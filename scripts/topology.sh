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
# From /: the caller's directory (a fresh clone under a root-only mktemp dir) may be closed to
# postgres, and Patroni's worker processes chdir back to it at start.
as_postgres() {
  if [ "$(id -un)" = postgres ]; then "$@"; else (cd / && runuser -u postgres -- "$@"); fi
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

# ---------------------------------------------------------------------------------------------
# The high-availability topology (docs/operating.md "On a Patroni cluster"):
#
#   node1..3   127.0.0.1:5441-5443  PostgreSQL under Patroni (REST 8008-8010, Raft 5451-5453:
#                                   Patroni's built-in consensus store, no separate service)
#   haproxy    127.0.0.1:5445       the primary (Patroni's REST check GET /primary)
#              127.0.0.1:5446       the replicas (GET /replica), round robin
#
# Usage: scripts/topology.sh ha start|stop|reset|status|failover|switchover|env
# synchronous_mode_strict: a commit waits for a synchronous standby even when none is left (writes
# stall rather than be acknowledged on one node only), and Patroni promotes only that standby.
# primary_start_timeout 0: a crashed leader is failed over at once rather than crash-recovered in place.
HA_DIR=${TOPOLOGY_HA_DIR:-$STATE_DIR/ha}
HA_SCOPE=${TOPOLOGY_HA_SCOPE:-aag-ha}
HA_PG_PORTS=(5441 5442 5443)
HA_REST_PORTS=(8008 8009 8010)
HA_RAFT_PORTS=(5451 5452 5453)
HA_PRIMARY_PORT=${TOPOLOGY_HA_PRIMARY_PORT:-5445}
HA_REPLICA_PORT=${TOPOLOGY_HA_REPLICA_PORT:-5446}

# Debian's patroni runs on the system's python3 (not whichever python3 comes first on PATH).
python3_has_syncobj() { /usr/bin/python3 -c 'import pysyncobj' >/dev/null 2>&1; }

ensure_ha_installed() {
  local missing=()
  command -v patroni >/dev/null 2>&1 || missing+=(patroni)
  python3_has_syncobj || missing+=(python3-pysyncobj)
  command -v haproxy >/dev/null 2>&1 || missing+=(haproxy)
  command -v curl >/dev/null 2>&1 || missing+=(curl)
  [ -n "$PG_VERSION" ] && [ -x "$PG_BIN/postgres" ] || missing+=(postgresql)
  [ ${#missing[@]} = 0 ] && return 0
  [ "$(id -u)" = 0 ] || { log "missing: ${missing[*]} (apt-get install them, as root)"; return 1; }
  log "installing ${missing[*]} (Debian packages)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  PG_VERSION=$(ls /usr/lib/postgresql | sort -V | tail -n 1)
  PG_BIN=/usr/lib/postgresql/$PG_VERSION/bin
}

ha_node_dir() { printf '%s/node%s' "$HA_DIR" "$1"; }
ha_rest() { curl -fsS --max-time 2 "http://$HOST:${HA_REST_PORTS[$(($1 - 1))]}$2" 2>/dev/null; }
ha_patroni_running() { local pid; pid=$(cat "$(ha_node_dir "$1")/patroni.pid" 2>/dev/null) && kill -0 "$pid" 2>/dev/null; }

write_patroni_config() {
  local n=$1 dir partners="" i
  dir=$(ha_node_dir "$n")
  for i in 1 2 3; do [ "$i" = "$n" ] || partners+="'$HOST:${HA_RAFT_PORTS[$((i - 1))]}', "; done
  cat >"$dir/patroni.yml" <<EOF
scope: $HA_SCOPE
name: node$n
log:
  level: WARNING
restapi:
  listen: $HOST:${HA_REST_PORTS[$((n - 1))]}
  connect_address: $HOST:${HA_REST_PORTS[$((n - 1))]}
raft:
  data_dir: $dir/raft
  self_addr: $HOST:${HA_RAFT_PORTS[$((n - 1))]}
  partner_addrs: [${partners%, }]
bootstrap:
  dcs:
    ttl: 10
    loop_wait: 1
    retry_timeout: 4
    maximum_lag_on_failover: 1048576
    primary_start_timeout: 0
    synchronous_mode: true
    synchronous_mode_strict: true
    synchronous_node_count: 1
    postgresql:
      use_pg_rewind: true
      use_slots: true
      parameters:
        wal_level: replica
        hot_standby: 'on'
        wal_log_hints: 'on'
        max_wal_senders: 10
        max_replication_slots: 10
        max_connections: 100
        shared_buffers: 32MB
        wal_keep_size: 128MB
        wal_receiver_status_interval: 1s
        hot_standby_feedback: 'on'
  initdb:
    - encoding: UTF8
    - locale: C.UTF-8
postgresql:
  listen: $HOST:${HA_PG_PORTS[$((n - 1))]}
  connect_address: $HOST:${HA_PG_PORTS[$((n - 1))]}
  data_dir: $dir/data
  bin_dir: $PG_BIN
  pgpass: $dir/pgpass
  authentication:
    superuser: {username: postgres}
    replication: {username: postgres}
  parameters:
    unix_socket_directories: '$dir'
    logging_collector: 'off'
    # A standby whose primary went away tries the new one every half second, not every 5 s: a strict
    # synchronous primary accepts no commit until a standby is back, so this bounds the write gap.
    wal_retrieve_retry_interval: 500ms
  pg_hba:
    - local all all trust
    - host all all $HOST/32 trust
    - host replication all $HOST/32 trust
EOF
}

start_ha_node() {
  local n=$1 dir
  dir=$(ha_node_dir "$n")
  ha_patroni_running "$n" && return 0
  mkdir -p "$dir/raft"
  write_patroni_config "$n"
  chown -R postgres:postgres "$dir"
  chmod 700 "$dir"
  log "starting patroni node$n (PostgreSQL $HOST:${HA_PG_PORTS[$((n - 1))]}, REST $HOST:${HA_REST_PORTS[$((n - 1))]})"
  as_postgres bash -c 'setsid /usr/bin/patroni "$1" >>"$2" 2>&1 </dev/null & echo $! >"$3"' _ "$dir/patroni.yml" "$dir/patroni.log" "$dir/patroni.pid"
}

haproxy_running() { local pid; pid=$(cat "$HA_DIR/haproxy.pid" 2>/dev/null) && kill -0 "$pid" 2>/dev/null; }

start_haproxy() {
  haproxy_running && return 0
  local servers="" i
  for i in 1 2 3; do
    servers+="  server node$i $HOST:${HA_PG_PORTS[$((i - 1))]} check port ${HA_REST_PORTS[$((i - 1))]}"$'\n'
  done
  cat >"$HA_DIR/haproxy.cfg" <<EOF
global
  maxconn 1000
  pidfile $HA_DIR/haproxy.pid

defaults
  mode tcp
  timeout connect 2s
  timeout client 30m
  timeout server 30m
  timeout check 1s
  # A node that stops being what the port promises loses its sessions at once: no client keeps
  # writing to a former primary (or reading from a promoted replica) through this port.
  default-server inter 500ms fall 2 rise 1 on-marked-down shutdown-sessions

listen primary
  bind $HOST:$HA_PRIMARY_PORT
  option httpchk GET /primary
  http-check expect status 200
${servers}
listen replicas
  bind $HOST:$HA_REPLICA_PORT
  balance roundrobin
  option httpchk GET /replica
  http-check expect status 200
${servers}
EOF
  log "starting haproxy (primary $HOST:$HA_PRIMARY_PORT, replicas $HOST:$HA_REPLICA_PORT)"
  haproxy -D -f "$HA_DIR/haproxy.cfg"
}

stop_haproxy() {
  haproxy_running || return 0
  kill "$(cat "$HA_DIR/haproxy.pid")" 2>/dev/null || true
  rm -f "$HA_DIR/haproxy.pid"
}

# The node Patroni's REST API reports as the running leader (`/primary` answers 200 there only).
ha_leader() {
  local i
  for i in 1 2 3; do
    if curl -fs -o /dev/null --max-time 1 "http://$HOST:${HA_REST_PORTS[$((i - 1))]}/primary" 2>/dev/null; then echo "$i"; return 0; fi
  done
  return 1
}

ha_wait() {
  local what=$1 seconds=$2 check=$3
  for _ in $(seq 1 $((seconds * 2))); do eval "$check" >/dev/null && return 0; sleep 0.5; done
  log "timed out after ${seconds}s waiting for $what"
  return 1
}

ha_leader_sql() {
  local leader
  leader=$(ha_leader) || return 1
  psql -h "$HOST" -p "${HA_PG_PORTS[$((leader - 1))]}" -U postgres -d postgres -XAtqc "$1" 2>/dev/null
}

ha_replicas_streaming() {
  [ "$(ha_leader_sql "select count(*) filter (where state = 'streaming') || '/' || count(*) filter (where sync_state = 'sync') from pg_stat_replication")" = 2/1 ]
}

ha_start() {
  ensure_ha_installed
  mkdir -p "$HA_DIR"
  chown postgres:postgres "$HA_DIR" 2>/dev/null || true
  local n
  for n in 1 2 3; do start_ha_node "$n"; done
  start_haproxy
  ha_wait "a leader" 120 ha_leader
  ha_wait "two streaming replicas, one synchronous" 120 ha_replicas_streaming
  ha_wait "HAProxy's primary port" 30 "pg_isready -h $HOST -p $HA_PRIMARY_PORT -q"
  ha_wait "HAProxy's replica port" 30 "pg_isready -h $HOST -p $HA_REPLICA_PORT -q"
  ha_status >&2
  ha_env
}

ha_stop() {
  stop_haproxy
  local n pid
  for n in 1 2 3; do
    # SIGTERM: Patroni stops its PostgreSQL (fast shutdown) and exits; data and Raft state stay.
    ha_patroni_running "$n" && kill "$(cat "$(ha_node_dir "$n")/patroni.pid")" 2>/dev/null || true
  done
  for n in 1 2 3; do
    pid=$(cat "$(ha_node_dir "$n")/patroni.pid" 2>/dev/null) || continue
    for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    rm -f "$(ha_node_dir "$n")/patroni.pid"
  done
  log "ha topology stopped (data kept in $HA_DIR; ha reset removes it)"
}

# Stops the cluster and removes its data and Raft state, so the next `ha start` bootstraps a new
# cluster. CI starts from one: a cluster restarted on an earlier run's state (the timeline the
# failover test left, Raft journals) was seen electing no leader within two minutes.
ha_reset() {
  ha_stop
  case "$HA_DIR" in
    */ha) rm -rf "$HA_DIR" ;;
    *) log "not removing $HA_DIR (not a directory named ha)"; return 1 ;;
  esac
  log "ha topology removed ($HA_DIR)"
}

ha_env() {
  printf 'DATABASE_URL=postgres://postgres@%s:%s/postgres\n' "$HOST" "$HA_PRIMARY_PORT"
  printf 'DATABASE_REPLICA_URLS=postgres://postgres@%s:%s/postgres\n' "$HOST" "$HA_REPLICA_PORT"
  printf 'DATABASE_LISTEN_URL=postgres://postgres@%s:%s/postgres\n' "$HOST" "$HA_PRIMARY_PORT"
}

ha_status() {
  local i members=""
  for i in 1 2 3; do members=$(ha_rest "$i" /cluster) && break; done
  # One line per node from Patroni's view of the cluster: role (leader, sync_standby, replica), state, timeline, lag.
  MEMBERS=$members /usr/bin/python3 - "$HOST" "${HA_PG_PORTS[@]}" <<'EOF' || true
import json, os, sys
host, ports = sys.argv[1], sys.argv[2:]
members = {m["name"]: m for m in json.loads(os.environ["MEMBERS"] or '{"members": []}')["members"]}
for index, port in enumerate(ports, 1):
    m = members.get(f"node{index}")
    what = f"{m['role']}, {m['state']}, timeline {m.get('timeline')}, lag {m.get('lag', 0)}" if m else "not running"
    print(f"node{index}     {host}:{port}  {what}")
EOF
  printf 'haproxy   %s:%s (primary) %s, %s:%s (replicas) %s\n' "$HOST" "$HA_PRIMARY_PORT" "$(pg_isready -h "$HOST" -p "$HA_PRIMARY_PORT" -q && echo up || echo down)" \
    "$HOST" "$HA_REPLICA_PORT" "$(pg_isready -h "$HOST" -p "$HA_REPLICA_PORT" -q && echo up || echo down)"
}

# SIGKILL to the leader's postmaster: no shutdown checkpoint, no goodbye to clients or standbys.
ha_failover() {
  local leader pid
  leader=$(ha_leader) || { log "no running leader to kill"; return 1; }
  pid=$(head -n 1 "$(ha_node_dir "$leader")/data/postmaster.pid")
  kill -KILL "$pid"
  echo "killed=node$leader"
}

# A planned change of leader (to the synchronous standby), through Patroni's REST API.
ha_switchover() {
  local leader
  leader=$(ha_leader) || { log "no running leader"; return 1; }
  curl -fsS --max-time 30 -XPOST -d "{\"leader\": \"node$leader\"}" "http://$HOST:${HA_REST_PORTS[$((leader - 1))]}/switchover" >&2
  echo >&2
  ha_wait "a new leader" 60 "[ \"\$(ha_leader)\" != '' ] && [ \"\$(ha_leader)\" != $leader ]"
  echo "leader=node$(ha_leader)"
}

if [ "${1:-}" = ha ]; then
  case "${2:-}" in
    start) ha_start ;;
    stop) ha_stop ;;
    reset) ha_reset ;;
    status) ha_status ;;
    env) ha_env ;;
    failover) ha_failover ;;
    switchover) ha_switchover ;;
    *)
      echo "usage: $0 ha start|stop|reset|status|env|failover|switchover" >&2
      exit 2
      ;;
  esac
  exit 0
fi

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
    echo "usage: $0 start|stop|status|env|replica-stop|replica-start, or $0 ha start|stop|reset|status|env|failover|switchover" >&2
    exit 2
    ;;
esac
