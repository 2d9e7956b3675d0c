#!/usr/bin/env bash
# The fleet benchmark of issue 23, in one command, against the local PostgreSQL:
#
#   benchmarks/fleet.sh            # full run (~25-30 min on 2 cores): docs/benchmarks/fleet/
#   benchmarks/fleet.sh --quick    # smoke run (~3 min): benchmarks/target/fleet-quick/
#   benchmarks/fleet.sh --help     # every option (phases, sizes, output folder)
#
# Phases, each with its baseline in the same run: drain by P = 1, 2, 4 member JVMs at the same total
# workers, beside Graphile Worker with the same number of Node processes; 32 concurrent business
# transactions enqueueing transactionally, with a notify channel and without, and the commit →
# hand-out latency of a listening claimStream; housekeeping's database CPU per interval at P = 1
# and P = 8 member JVMs; wake latency. Members are child JVMs (io.workqueue.examples.bench.FleetMember)
# on this classpath, driven over stdin/stdout by io.workqueue.examples.bench.Fleet.
#
# Uses PostgreSQL at $PGHOST:$PGPORT (default 127.0.0.1:5432, user postgres, trust) and databases
# "bench_fleet" and, for the peer, "bench_fleet_graphile" (PEER_DB), created if missing; it touches no
# other database, so it can run beside the suite. Builds the library and the bench module first
# (classpath.sh; BENCH_SKIP_BUILD=1 skips that; MAVEN_OPTS=-Dmaven.repo.local=DIR picks the Maven
# repository). Needs Java 17, Maven and psql; the peer needs Node and npm (skipped otherwise).
# FLEET_JAVA_OPTS adds JVM options to the parent.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
cd "$repo"
export PGHOST="${PGHOST:-127.0.0.1}" PGPORT="${PGPORT:-5432}" PGUSER="${PGUSER:-postgres}"
export PEER_DB="${PEER_DB:-bench_fleet_graphile}"

for arg in "$@"; do
    if [ "$arg" = "--help" ] || [ "$arg" = "-h" ]; then help=1; fi
done
if [ -z "${help:-}" ]; then
    pg_isready -q || { echo "PostgreSQL is not accepting connections at $PGHOST:$PGPORT" >&2; exit 1; }
    # shellcheck source=database.sh
    source benchmarks/database.sh
    for db in bench_fleet "$PEER_DB"; do
        ensure_database "$db"
    done
fi

# shellcheck source=classpath.sh
source benchmarks/classpath.sh
# shellcheck disable=SC2086
exec java -Xms256m -Xmx1g -Djava.awt.headless=true -Dbench.repo="$repo" -Dbench.database=bench_fleet ${FLEET_JAVA_OPTS:-} \
    -cp "$classpath" io.workqueue.examples.bench.Fleet "$@"
