#!/usr/bin/env bash
# Graphile Worker's batched drain on the local PostgreSQL, as a peer baseline.
#
# Installs graphile-worker (and pg) from the npm registry into a scratch folder that is never
# committed (default: benchmarks/target/peers/graphile-worker; override with SCRATCH), then runs
# drain.mjs from there against its own database (default "bench_graphile", created if missing).
#
#   benchmarks/peers/graphile-worker/run.sh [N]
#
# Environment: PGHOST (127.0.0.1), PGPORT (5432), PGUSER (postgres), PEER_DB (bench_graphile),
# GRAPHILE_WORKER_VERSION (^0.18.0; falls back to the newest 0.x that runs on this Node),
# CONCURRENCY (24), LOCAL_QUEUE_SIZE (500), PEER_SCRIPT (drain.mjs; the fleet benchmark runs
# fleet.mjs, which talks to its parent over stdin and stdout). Prints one JSON line on stdout; exit
# code 3 means "could not install or run the peer here" (the harness then reports it as skipped).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
export PGHOST="${PGHOST:-127.0.0.1}" PGPORT="${PGPORT:-5432}" PGUSER="${PGUSER:-postgres}"
db="${PEER_DB:-bench_graphile}"
scratch="${SCRATCH:-$repo/benchmarks/target/peers/graphile-worker}"
wanted="${GRAPHILE_WORKER_VERSION:-^0.18.0}"
n="${1:-${N:-200000}}"

command -v node >/dev/null && command -v npm >/dev/null || { echo "node/npm not found" >&2; exit 3; }

install() {
    local spec="$1"
    mkdir -p "$scratch"
    (cd "$scratch" \
        && { [ -f package.json ] || printf '{"name":"graphile-worker-peer","private":true,"type":"module"}\n' > package.json; } \
        && timeout 300 npm install --no-audit --no-fund --loglevel=error "graphile-worker@$spec" pg >&2)
}

runs_here() {
    (cd "$scratch" && node -e 'import("graphile-worker").then(() => process.exit(0), (e) => { console.error(e.message); process.exit(1); })' >&2)
}

if ! { [ -d "$scratch/node_modules/graphile-worker" ] && runs_here; }; then
    if ! install "$wanted" || ! runs_here; then
        echo "graphile-worker@$wanted does not install or load on node $(node -v); trying 0.16.x" >&2
        install "^0.16.0" && runs_here || { echo "could not install graphile-worker" >&2; exit 3; }
    fi
fi

if [ "$(psql -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = '$db'")" != "1" ]; then
    createdb "$db"
fi

script="${PEER_SCRIPT:-drain.mjs}"
cp "$here/$script" "$scratch/$script"
cd "$scratch"
N="$n" NO_LOG_SUCCESS=1 DATABASE_URL="postgres://$PGUSER@$PGHOST:$PGPORT/$db" exec node "$script"
