#!/usr/bin/env bash
# What one wakeup costs the process it wakes: an idle claimStream on an empty queue, listening on a
# channel while pgbench sends NOTIFY on it at a steady rate, beside the same instance not listening,
# alternating in one JVM. The difference in client CPU per notification is the client's cost of a
# wake-driven claim. Results go to docs/benchmarks/wake-cost/.
#
#   benchmarks/wake-cost.sh                                   # 200 NOTIFY/s, 60 s warm-up and 5 rounds of 20 s per variant
#   benchmarks/wake-cost.sh --rounds 1 --seconds 10 --warmup-seconds 20 --out /tmp/wc
#
# Uses the local PostgreSQL ($PGHOST:$PGPORT, default 127.0.0.1:5432, user postgres, trust) and the
# database $BENCH_DATABASE (default "bench"; created if missing); needs pgbench. Never run by
# `mvn verify`.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
cd "$repo"
export PGHOST="${PGHOST:-127.0.0.1}" PGPORT="${PGPORT:-5432}" PGUSER="${PGUSER:-postgres}"
database="${BENCH_DATABASE:-bench}"
# shellcheck source=database.sh
source benchmarks/database.sh
ensure_database "$database"
# shellcheck source=classpath.sh
source benchmarks/classpath.sh
# shellcheck disable=SC2086
exec java -Xms512m -Xmx2g -Djava.awt.headless=true -Dbench.repo="$repo" -Dbench.database="$database" \
    ${BENCH_JAVA_OPTS:-} -cp "$classpath" io.workqueue.examples.bench.WakeCost "$@"
