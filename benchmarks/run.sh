#!/usr/bin/env bash
# The benchmark suite of issue #5, in one command, against the local PostgreSQL.
#
#   benchmarks/run.sh            # full run: results, CSV, JSON, PNG charts and README in docs/benchmarks/
#   benchmarks/run.sh --quick    # small sizes (~4 min): results in benchmarks/target/bench-quick/
#   benchmarks/run.sh --help     # every option (scenarios, sizes, output folder)
#
# Builds the library (mvn install -DskipTests) and the bench module, makes sure PostgreSQL at
# $PGHOST:$PGPORT (default 127.0.0.1:5432, user postgres, trust) is up and has a database "bench",
# then runs io.workqueue.examples.bench.Bench. Needs Java 17, Maven, psql and pgbench; the peer
# scenario needs Node and npm (it is skipped with a message otherwise). Never run by `mvn verify`.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
cd "$repo"
export PGHOST="${PGHOST:-127.0.0.1}" PGPORT="${PGPORT:-5432}" PGUSER="${PGUSER:-postgres}"

for arg in "$@"; do
    if [ "$arg" = "--help" ] || [ "$arg" = "-h" ]; then help=1; fi
done

if [ -z "${help:-}" ]; then
    command -v pgbench >/dev/null || { echo "pgbench not found (Debian: apt-get install postgresql-client)" >&2; exit 1; }
    if ! pg_isready -q; then
        echo "PostgreSQL is not accepting connections at $PGHOST:$PGPORT; trying to start the local cluster" >&2
        pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n 1)" main start
        for _ in $(seq 1 60); do pg_isready -q && break; sleep 1; done
        pg_isready
    fi
    # shellcheck source=database.sh
    source benchmarks/database.sh
    ensure_database bench
fi

# shellcheck source=classpath.sh
source benchmarks/classpath.sh

# BENCH_JAVA_OPTS adds JVM options, e.g. -XX:StartFlightRecording=filename=drain.jfr,settings=profile
# for the allocation and CPU profile behind docs/benchmarks/ANALYSIS.md.
# shellcheck disable=SC2086
exec java -Xms512m -Xmx2g -Djava.awt.headless=true -Dbench.repo="$repo" ${BENCH_JAVA_OPTS:-} \
    -cp "$classpath" io.workqueue.examples.bench.Bench "$@"
